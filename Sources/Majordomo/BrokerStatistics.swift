import MessagePath
import Foundation

/// A snapshot of what the broker has done since it started.
public struct BrokerStatistics: Sendable, Codable, Equatable {
    /// Valid client requests to worker services (not mmi.*), including those later rejected or dropped.
    public var requests = 0
    /// Requests handed to a worker.
    public var dispatched = 0
    /// Worker replies forwarded to clients.
    public var replies = 0
    /// 8/MMI requests the broker answered itself.
    public var mmiRequests = 0
    /// Client requests refused, by reason.
    public var rejections = RejectionCounts()
    /// Requests a fault rule dropped before dispatch.
    public var faultDropped = 0
    /// Requests a fault rule delayed, duplicated, reordered or damaged; heartbeats it held back.
    public var faults = FaultTally()
    /// Invalid or unexpected input, by kind.
    public var badInput = BadInputCounts()
    /// Messages to a peer that had gone (EHOSTUNREACH under ROUTER_MANDATORY).
    public var unroutable = 0
    /// Messages not sent because the peer's queue was at its high-water mark.
    public var sendBlocked = 0
    /// HEARTBEAT commands sent to workers.
    public var heartbeatsSent = 0
    /// READY commands accepted.
    public var workersRegistered = 0
    /// Workers removed after `heartbeatLiveness` silent intervals.
    public var workersExpired = 0
    /// HEARTBEATs and REPLYs from workers after they were expired (their own heartbeats were late
    /// or lost, not they): told to reconnect, and not counted as bad input.
    public var expiredWorkersHeard = 0
    /// Requests handed to a worker that, by its heartbeats' `held=N`, never reached it.
    public var requestsLostOnTheWay = 0
    /// Times a silent worker was not expired because the broker was still reading a backlog (a
    /// flood), behind which its HEARTBEAT may have been waiting.
    public var expiriesPostponed = 0
    /// Workers that sent DISCONNECT, or were sent one.
    public var workersDisconnected = 0
    /// Worker commands refused because the sender is not one of the host's plugins (closed mode).
    public var unauthorizedWorkers = 0
    /// Times the broker busy-polled after traffic (`BrokerConfiguration.busyPoll`) instead of sleeping at once.
    public var busyPolls = 0
    /// Of those, how many saw the next message arrive while polling: each saved a thread wake-up.
    public var busyPollHits = 0
    /// Bursts of traffic after which the broker slept at once, as its recent spins caught too few
    /// messages, or spun longer than the sleeps they saved would have cost (`BusyPollGovernor`):
    /// spinning there would only have taken a core from the peers it waits for.
    public var busyPollsSkipped = 0
    /// Time spent busy-polling, caught or not, ns: CPU the broker paid for its spins.
    public var busyPollNanoseconds = 0
    /// What one sleep in its poll costs the broker thread in CPU, as last measured, ns (0 before
    /// the first measurement): what a spin that catches a message saves, against which
    /// `BusyPollGovernor` weighs the time spent spinning.
    public var busyPollSleepCostNanoseconds = 0
    /// Live workers per service name.
    public var workersPerService: [String: Int] = [:]
    /// Waiting requests per service name (services with none are left out).
    public var queuedPerService: [String: Int] = [:]
    /// When the broker thread took this snapshot.
    public var takenAt = Date(timeIntervalSince1970: 0)

    public init() {}

    public struct RejectionCounts: Sendable, Codable, Equatable {
        public var oversize = 0
        public var oversizeReply = 0
        public var expired = 0
        public var queueFull = 0
        public var malformed = 0
        public var forbidden = 0
        public var total: Int { oversize + oversizeReply + expired + queueFull + malformed + forbidden }
        public init() {}

        mutating func count(_ reason: BrokerRejection.Reason) {
            switch reason {
            case .oversize: oversize += 1
            case .oversizeReply: oversizeReply += 1
            case .expired: expired += 1
            case .queueFull: queueFull += 1
            case .malformed: malformed += 1
            case .forbidden: forbidden += 1
            }
        }
    }

    public struct BadInputCounts: Sendable, Codable, Equatable {
        public var malformedFrames = 0
        public var wrongHeader = 0
        public var unknownCommand = 0
        public var unexpectedCommand = 0
        public var oversize = 0
        public var unknownService = 0
        public var total: Int { malformedFrames + wrongHeader + unknownCommand + unexpectedCommand + oversize + unknownService }
        public init() {}

        public subscript(kind: BadInputKind) -> Int {
            get {
                switch kind {
                case .malformedFrames: malformedFrames
                case .wrongHeader: wrongHeader
                case .unknownCommand: unknownCommand
                case .unexpectedCommand: unexpectedCommand
                case .oversize: oversize
                case .unknownService: unknownService
                }
            }
            set {
                switch kind {
                case .malformedFrames: malformedFrames = newValue
                case .wrongHeader: wrongHeader = newValue
                case .unknownCommand: unknownCommand = newValue
                case .unexpectedCommand: unexpectedCommand = newValue
                case .oversize: oversize = newValue
                case .unknownService: unknownService = newValue
                }
            }
        }
    }
}

/// One live worker, as the host sees it (Flowbus workers set their routing id to `<plugin>/<pid>/<n>`).
public struct WorkerInfo: Sendable, Codable, Equatable {
    /// The worker's routing id, printable (text when it is printable ASCII, else 0x-hex).
    public var routingID: String
    public var service: String
    /// When the broker last received any command from it.
    public var lastHeard: Date
    /// Replies it has sent back.
    public var requestsServed: Int
    /// Whether it holds a request now.
    public var busy: Bool
    /// How many requests it holds now.
    public var inFlight: Int
    /// How many it takes at once: 1 for a plain 7/MDP worker, N for one whose READY offered `credit=N`.
    public var credit: Int

    public init(routingID: String, service: String, lastHeard: Date, requestsServed: Int, busy: Bool, inFlight: Int? = nil, credit: Int = 1) {
        self.routingID = routingID
        self.service = service
        self.lastHeard = lastHeard
        self.requestsServed = requestsServed
        self.busy = busy
        self.inFlight = inFlight ?? (busy ? 1 : 0)
        self.credit = credit
    }
}
