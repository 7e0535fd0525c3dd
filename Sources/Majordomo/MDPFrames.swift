import ZeroMQ

/// The fixed frames of 7/MDP, as the RFC writes them.
public enum MDP {
    /// "MDPC01": MDP/Client v0.1, frame 1 of every client REQUEST and REPLY.
    public static let clientHeader: Frame = Array("MDPC01".utf8)
    /// "MDPW01": MDP/Worker v0.1, frame 1 of every worker command.
    public static let workerHeader: Frame = Array("MDPW01".utf8)

    /// The one-byte command frame (frame 2) of MDP/Worker.
    public enum WorkerCommand: UInt8, Sendable, CaseIterable {
        case ready = 0x01
        case request = 0x02
        case reply = 0x03
        case heartbeat = 0x04
        case disconnect = 0x05

        /// The command frame itself.
        public var frame: Frame { [rawValue] }

        public var name: String {
            switch self {
            case .ready: "READY"
            case .request: "REQUEST"
            case .reply: "REPLY"
            case .heartbeat: "HEARTBEAT"
            case .disconnect: "DISCONNECT"
            }
        }
    }

    /// The 8/MMI service namespace: names starting with this are answered by the broker.
    public static let mmiPrefix: Frame = Array("mmi.".utf8)
    /// The one 8/MMI service the broker implements: body = a service name.
    public static let mmiService: Frame = Array("mmi.service".utf8)

    static let readyFrame: Frame = WorkerCommand.ready.frame
    static let requestFrame: Frame = WorkerCommand.request.frame
    static let replyFrame: Frame = WorkerCommand.reply.frame
    static let heartbeatFrame: Frame = WorkerCommand.heartbeat.frame
    static let disconnectFrame: Frame = WorkerCommand.disconnect.frame
    static let empty: Frame = []

    /// Flowbus's one extension to 7/MDP: READY may carry a fifth frame `credit=N`, the number of
    /// requests the worker takes at once (1...`maxCredit`). Without it a worker holds one, as the RFC has it.
    public static let creditPrefix: Frame = Array("credit=".utf8)
    /// The largest credit a worker may offer.
    public static let maxCredit = 1024

    /// Flowbus's second extension: a closed broker appends to each request it hands a worker one
    /// last body frame `X-Flowbus-Peer:<User-Id>`, naming the requester as the host's ZAP handler
    /// admitted it (`client:<address>`, `plugin:<name>`…), so a worker can bound what one peer may
    /// hold. Workers take it off before the body is read; an open broker adds none.
    public static let peerPrefix: Frame = Array("X-Flowbus-Peer:".utf8)

    /// Flowbus's third extension: a worker's HEARTBEAT may carry one more frame, `held=N`, the
    /// number of requests it holds. A request the broker handed it that never arrived (lost on the
    /// way, as in a partition) would otherwise hold the worker's credit for ever; the broker lets
    /// it go once a heartbeat sent well after it says the worker holds fewer (`BrokerLoop`).
    public static let heldPrefix: Frame = Array("held=".utf8)

    /// The HEARTBEAT extension frame for `held` requests.
    static func heldFrame(_ held: Int) -> Frame {
        heldPrefix + Array(String(held).utf8)
    }

    /// The count a HEARTBEAT extension frame names, or nil when it is not `held=N` with N in 0...maxCredit.
    static func parseHeld(_ frame: some Collection<UInt8>) -> Int? {
        guard frame.count > heldPrefix.count, frame.count <= heldPrefix.count + 4, frame.starts(with: heldPrefix) else { return nil }
        let digits = frame.dropFirst(heldPrefix.count)
        var value = 0
        for byte in digits {
            guard byte >= 0x30, byte <= 0x39 else { return nil }
            value = value * 10 + Int(byte - 0x30)
        }
        guard value <= maxCredit, digits.count == 1 || digits.first != 0x30 else { return nil }
        return value
    }

    /// The READY extension frame for `credit`; nil for 1, which plain 7/MDP already means.
    static func creditFrame(_ credit: Int) -> Frame? {
        credit == 1 ? nil : creditPrefix + Array(String(credit).utf8)
    }

    /// The credit a READY extension frame offers, or nil when it is not `credit=N` with N in 1...maxCredit.
    static func parseCredit(_ frame: some Collection<UInt8>) -> Int? {
        guard frame.count > creditPrefix.count, frame.count <= creditPrefix.count + 4,
              frame.starts(with: creditPrefix) else { return nil }
        let digits = frame.dropFirst(creditPrefix.count)
        var value = 0
        for byte in digits {
            guard byte >= 0x30, byte <= 0x39 else { return nil }
            value = value * 10 + Int(byte - 0x30)
        }
        // No leading zeros: one spelling per number keeps the frame canonical.
        guard value >= 1, value <= maxCredit, digits.first != 0x30 else { return nil }
        return value
    }
}

/// Who sent an MDP message. Client REQUEST and REPLY look the same on the wire;
/// only the direction tells them apart.
public enum MDPDirection: Sendable {
    /// From a client or a worker to the broker.
    case toBroker
    /// From the broker to a client or a worker.
    case fromBroker
}
