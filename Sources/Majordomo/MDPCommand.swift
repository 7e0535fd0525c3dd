import ZeroMQ

/// One 7/MDP command, without the peer identity frame a ROUTER adds or strips.
public enum MDPCommand: Equatable, Sendable {
    /// Client → broker: `"" MDPC01 service body...`.
    case clientRequest(service: Frame, body: [Frame])
    /// Broker → client: `"" MDPC01 service body...`.
    case clientReply(service: Frame, body: [Frame])
    /// Worker → broker: `"" MDPW01 0x01 service`, plus `credit=N` when the worker takes N > 1
    /// requests at once (Flowbus's extension; see `MDP.creditPrefix`).
    case ready(service: Frame, credit: Int = 1)
    /// Broker → worker: `"" MDPW01 0x02 client "" body...`.
    case request(client: Frame, body: [Frame])
    /// Worker → broker: `"" MDPW01 0x03 client "" body...`.
    case reply(client: Frame, body: [Frame])
    /// Either way: `"" MDPW01 0x04`.
    case heartbeat
    /// Either way: `"" MDPW01 0x05`.
    case disconnect

    /// The frames on the wire. The RFC gives every REQUEST and REPLY at least one body frame,
    /// so an empty body is sent as one empty frame.
    public var frames: [Frame] {
        switch self {
        case .clientRequest(let service, let body), .clientReply(let service, let body):
            return [MDP.empty, MDP.clientHeader, service] + Self.nonEmpty(body)
        case .ready(let service, let credit):
            let ready = [MDP.empty, MDP.workerHeader, MDP.readyFrame, service]
            return MDP.creditFrame(credit).map { ready + [$0] } ?? ready
        case .request(let client, let body):
            return [MDP.empty, MDP.workerHeader, MDP.requestFrame, client, MDP.empty] + Self.nonEmpty(body)
        case .reply(let client, let body):
            return [MDP.empty, MDP.workerHeader, MDP.replyFrame, client, MDP.empty] + Self.nonEmpty(body)
        case .heartbeat:
            return [MDP.empty, MDP.workerHeader, MDP.heartbeatFrame]
        case .disconnect:
            return [MDP.empty, MDP.workerHeader, MDP.disconnectFrame]
        }
    }

    /// The RFC's name for the command.
    public var name: String {
        switch self {
        case .clientRequest: "client REQUEST"
        case .clientReply: "client REPLY"
        case .ready: "READY"
        case .request: "REQUEST"
        case .reply: "REPLY"
        case .heartbeat: "HEARTBEAT"
        case .disconnect: "DISCONNECT"
        }
    }

    static func nonEmpty(_ body: [Frame]) -> [Frame] {
        body.isEmpty ? [MDP.empty] : body
    }
}
