import MessagePath
import ZeroMQ

/// How a broker behaves. The defaults suit one machine: short heartbeats, short expiry.
public struct BrokerConfiguration: Sendable {
    /// How often the broker sends HEARTBEAT to each idle worker, and expects to hear from it.
    public var heartbeatInterval: Duration = .milliseconds(500)
    /// How many intervals a worker may stay silent before the broker removes it.
    public var heartbeatLiveness: Int = 3
    /// How long a request waits in a service's queue (no worker yet, or all busy) before it expires.
    public var requestExpiry: Duration = .seconds(5)
    /// Requests one service may hold waiting; more are rejected with `.queueFull`.
    public var maxQueuedRequestsPerService: Int = 10_000
    /// Distinct services with waiting requests or workers; requests that would add more are rejected.
    public var maxServices: Int = 10_000
    /// Largest client request or worker reply (all frames, bytes) the broker forwards; larger ones are dropped and counted.
    public var maxMessageBytes: Int = 1 << 20
    /// Most frames in one message; more count as oversize.
    public var maxFramesPerMessage: Int = 256
    /// Transport cap (ZMQ_MAXMSGSIZE): libzmq closes a connection that sends a larger frame.
    public var transportMaxMessageBytes: Int? = 4 << 20
    /// Send and receive high-water marks of the ROUTER, in messages.
    public var highWaterMark: Int = 100_000
    /// CURVE server secret key; nil serves without encryption (ipc:// and loopback only).
    public var curveSecretKey: CurveKey?
    /// With `curveSecretKey`: ipc endpoints are bound without CURVE. The host's closed mode sets
    /// it: its ipc endpoints are in the owner-only run directory and its ZAP handler knows each
    /// ipc peer by pid and uid, so the host's own user's tools need no key there.
    public var plainIPC = false
    /// ZAP domain of the ROUTER; the host runs the `ZAPAuthenticator` that answers for it.
    public var zapDomain: String?
    /// Who may do what, by the class of peer the ZAP handler's User-Id names (needs `zapDomain`):
    /// only plugins and the host register as workers, clients call only client services. nil is
    /// open mode: every peer may do everything (the zguide's reference peers need it).
    public var access: BusAccess?
    /// Body of the MDP REPLY the broker sends when it rejects a client request; nil (or a nil
    /// result) drops the request silently and the client times out. Runs on the broker thread:
    /// keep it quick, and do not read `BrokerHandle.statistics` from it (that waits for this thread).
    public var rejectionReply: (@Sendable (BrokerRejection) -> [Frame]?)?
    /// How often counters are published to `BrokerHandle.statistics` (also the expiry tick).
    public var statisticsInterval: Duration = .milliseconds(100)
    /// How often one peer's bad input is logged, at most.
    public var badInputLogPeriod: Duration = .seconds(10)
    /// Sees the requests and replies of some services (by name prefix); nil observes nothing.
    public var observer: BrokerObserver?
    /// After a client request or a worker REPLY, how long the broker keeps polling without
    /// sleeping before it blocks again. The next message of a conversation (a worker's reply,
    /// a client's next request) usually comes within it and is handled without a thread wake-up,
    /// which roughly halves a request's round trip through the broker (see Benchmarks/README.md,
    /// mdp-rtt). Costs at most this much CPU per burst of traffic; heartbeats alone never start
    /// it, so an idle broker sleeps. Spins that keep catching nothing turn it off until probes
    /// catch again (`BusyPollGovernor`). `.zero` turns it off.
    public var busyPoll: Duration = .microseconds(50)
    /// How much spinning the broker accepts per message a spin catches, in what the sleep it
    /// saved would have cost the broker thread (measured on its own sleeps). At 1, the default,
    /// spinning stays on only where it costs no more CPU than sleeping: a spin that catches the
    /// next message 40 µs in, to save a 12 µs sleep, turns it off but for probes
    /// (`BusyPollGovernor`). Above 1 the broker pays CPU for the wake-ups' latency (`.infinity`:
    /// any spin that catches one in eight is worth it); below 1 it spins only where spinning saves CPU.
    public var busyPollBudget: Double = 1

    public init() {}

    public init(
        heartbeatInterval: Duration = .milliseconds(500),
        heartbeatLiveness: Int = 3,
        requestExpiry: Duration = .seconds(5),
        maxQueuedRequestsPerService: Int = 10_000,
        maxMessageBytes: Int = 1 << 20,
        curveSecretKey: CurveKey? = nil,
        zapDomain: String? = nil,
        rejectionReply: (@Sendable (BrokerRejection) -> [Frame]?)? = nil
    ) {
        self.heartbeatInterval = heartbeatInterval
        self.heartbeatLiveness = heartbeatLiveness
        self.requestExpiry = requestExpiry
        self.maxQueuedRequestsPerService = maxQueuedRequestsPerService
        self.maxMessageBytes = maxMessageBytes
        self.curveSecretKey = curveSecretKey
        self.zapDomain = zapDomain
        self.rejectionReply = rejectionReply
    }
}

/// A client request the broker refused, handed to `BrokerConfiguration.rejectionReply`.
public struct BrokerRejection: Sendable, Equatable {
    public enum Reason: String, Sendable, Codable, CaseIterable {
        /// The request was larger than `maxMessageBytes` (or `maxFramesPerMessage`).
        case oversize
        /// The worker's reply was larger than `maxMessageBytes`; the client gets this instead.
        case oversizeReply
        /// The request waited `requestExpiry` without a worker taking it.
        case expired
        /// The service's queue (or the broker's table of services) was full.
        case queueFull
        /// The request had no body frame (7/MDP gives a request at least one). A request with
        /// several is the worker's to refuse: only it knows what its body holds.
        case malformed
        /// A client called a service only plugins may call (`BrokerConfiguration.access`).
        case forbidden
    }

    public var reason: Reason
    /// The service name as the client sent it.
    public var service: Frame
    /// The client's routing id, printable.
    public var client: String
    /// What happened and what to do, for a person.
    public var detail: String

    /// The service name as text (invalid UTF-8 is replaced).
    public var serviceName: String { String(decoding: service, as: UTF8.self) }

    public init(reason: Reason, service: Frame, client: String, detail: String) {
        self.reason = reason
        self.service = service
        self.client = client
        self.detail = detail
    }
}
