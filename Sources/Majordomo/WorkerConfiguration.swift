import MessagePath
import ZeroMQ

/// How a worker keeps its conversation with the broker alive.
public struct WorkerConfiguration: Sendable {
    /// How often the worker sends HEARTBEAT; agree on it with the broker (7/MDP's known weakness).
    public var heartbeatInterval: Duration = .milliseconds(500)
    /// Silent intervals after which the worker considers the broker gone and reconnects.
    public var heartbeatLiveness: Int = 3
    /// First wait before reconnecting after the broker went silent or sent DISCONNECT.
    public var reconnectInitial: Duration = .milliseconds(100)
    /// The wait doubles on each failed attempt up to this.
    public var reconnectMax: Duration = .seconds(5)
    /// The socket's routing id; Flowbus workers use `<plugin>/<pid>/<n>` so the host can tie them to a process.
    public var routingID: String?
    /// The broker's CURVE public key and this worker's key pair; nil connects without CURVE.
    public var curveServerKey: CurveKey?
    public var curveKeyPair: CurveKeyPair?
    /// How many requests the worker takes at once. 1 is 7/MDP as written: the broker sends the
    /// next request only after the reply. N > 1 (up to `MDP.maxCredit`) adds Flowbus's READY
    /// extension frame `credit=N`: a Flowbus broker then keeps up to N requests in flight to this
    /// worker, which may reply in any order. Other 7/MDP brokers ignore the frame or refuse the READY.
    public var credit: Int = 1
    /// While a handler runs, another thread keeps the worker's heartbeats going, so a slow
    /// handler (waiting on another service) is not taken for a dead worker. Past this long in one
    /// handler the heartbeats stop: the worker is hung, the broker expires it and the host's
    /// supervisor, hearing nothing more from the process, kills and restarts it.
    public var busyLimit: Duration = .seconds(30)

    public init(
        heartbeatInterval: Duration = .milliseconds(500),
        heartbeatLiveness: Int = 3,
        reconnectInitial: Duration = .milliseconds(100),
        reconnectMax: Duration = .seconds(5),
        routingID: String? = nil,
        curveServerKey: CurveKey? = nil,
        curveKeyPair: CurveKeyPair? = nil,
        credit: Int = 1
    ) {
        self.credit = credit
        self.heartbeatInterval = heartbeatInterval
        self.heartbeatLiveness = heartbeatLiveness
        self.reconnectInitial = reconnectInitial
        self.reconnectMax = reconnectMax
        self.routingID = routingID
        self.curveServerKey = curveServerKey
        self.curveKeyPair = curveKeyPair
    }
}

/// One request a worker received: who asked (the client address to send back) and what.
public struct MajordomoRequest: Sendable, Equatable {
    public let service: String
    /// The client address frame of the broker's REQUEST, returned unchanged in the REPLY.
    public let client: Frame
    public let body: [Frame]
    /// Who sent it, as a closed broker names it (`MDP.peerPrefix`): `client:<address>`,
    /// `plugin:<name>`, `operator:…`; nil from an open broker.
    public let peer: String?

    public init(service: String, client: Frame, body: [Frame], peer: String? = nil) {
        self.service = service
        self.client = client
        self.body = body
        self.peer = peer
    }

    /// The request of a broker's REQUEST body (`parts[bodyStart...]`), its last frame taken as the
    /// peer's name when it is one (`MDP.peerPrefix`).
    init(service: String, client: Frame, parts: ReceivedParts, bodyStart: Int) {
        var end = parts.count
        var peer: String?
        if end - bodyStart > 1, MDPLayout.bytes(parts[end - 1], startWith: MDP.peerPrefix) {
            end -= 1
            peer = String(decoding: parts[end].dropFirst(MDP.peerPrefix.count), as: UTF8.self)
        }
        self.init(service: service, client: client, body: parts.frames(bodyStart..<end), peer: peer)
    }
}

/// Why a worker could not connect or talk to the broker.
public enum MajordomoWorkerError: Error, CustomStringConvertible {
    case invalidService(String)
    case transport(ZMQError, endpoint: String)
    case curveKeysIncomplete
    case invalidCredit(Int)

    public var description: String {
        switch self {
        case .invalidService(let name):
            "'\(name)' cannot be a worker's service: names are non-empty and mmi.* belongs to the broker"
        case .transport(let error, let endpoint):
            "worker socket to \(endpoint) failed: \(error); check the broker endpoint (FLOWBUS_BROKER)"
        case .curveKeysIncomplete:
            "CURVE needs both the broker's public key and this worker's key pair; give both or neither"
        case .invalidCredit(let credit):
            "a worker's credit is how many requests it takes at once, from 1 to \(MDP.maxCredit); \(credit) is outside that"
        }
    }
}
