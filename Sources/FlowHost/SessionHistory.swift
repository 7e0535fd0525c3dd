import Clone
import Dispatch
import Majordomo
import MessagePath
import Synchronization

/// How much history the host keeps. An event is kept packed (`PackedTraceEvent`: its repeated
/// words as numbers, its idempotency key as a UUID's 16 bytes or the words around the session's
/// id), 30 to 150 bytes in its session's one array: the defaults hold at most 100,000 events,
/// some 5 to 15 MB, however many sessions a simulation opens.
public struct SessionHistoryLimits: Codable, Sendable, Equatable {
    /// The newest events kept per session; older ones are dropped (and counted).
    public var eventsPerSession = 2_000
    /// Sessions with a history; past it, whole sessions are forgotten, closed ones first.
    public var sessions = 4_096
    /// Events kept over all sessions; past it, whole sessions are forgotten, closed ones first.
    public var totalEvents = 100_000
    /// Requests waiting for their reply (to pair them); the oldest is forgotten past it.
    public var pendingRequests = 4_096
    /// Observations the bus threads may queue for decoding; past it they are dropped (and counted).
    public var queuedObservations = 65_536

    public init() {}
}

/// Counters of the recorder, for tests and `flowbus trace` footers.
public struct SessionHistoryStatistics: Codable, Sendable, Equatable {
    public var sessions = 0
    public var events = 0
    /// Events dropped because their session already held `eventsPerSession`.
    public var droppedEvents = 0
    /// Whole sessions forgotten to stay within `sessions` or `totalEvents`.
    public var forgottenSessions = 0
    /// Observations the decoder could not keep up with, or bodies that were no Envelope.
    public var lostObservations = 0
    public var undecodable = 0
}

/// The host's record of what happened in each session (DESIGN.md, "Record histories"): every
/// intent and call to `vm.*` / `coord.*` and every `svc.*` call made for its actions, each with
/// its reply and the worker that served it, every Clone change under `/s/`, with sequences and
/// the host's timestamps. Bounded by `limits`.
///
/// The broker and the Clone server only hand their observations over (a lock and an append);
/// decoding happens on a queue of its own, in batches (`batchDelay`), so the message paths stay
/// cheap and wake nothing per message.
public final class SessionHistory: Sendable {
    public let limits: SessionHistoryLimits
    private let store: Mutex<HistoryStore>
    private let intake = Mutex<Intake>(Intake())
    private let matcher: Mutex<RequestMatcher>
    private let decoding = DispatchQueue(label: "flowbus.session-history")

    /// The broker services whose traffic is recorded: view models, coordinators, and the app
    /// services' calls a view model makes for a session's action (they carry its session).
    public static let servicePrefixes = ["vm.", "coord.", "svc."]

    public init(limits: SessionHistoryLimits = SessionHistoryLimits()) {
        self.limits = limits
        self.store = Mutex(HistoryStore(limits: limits))
        self.matcher = Mutex(RequestMatcher(limit: limits.pendingRequests))
    }

    /// The observer to put in `BrokerConfiguration.observer`.
    /// False when the limits keep no session (`flowbus up --history-sessions 0`): the host then
    /// attaches no observer to the broker or the Clone server.
    public var isRecording: Bool { limits.sessions > 0 && limits.eventsPerSession > 0 && limits.totalEvents > 0 }

    public var brokerObserver: BrokerObserver {
        BrokerObserver(servicePrefixes: Self.servicePrefixes) { [self] observation in take(.broker(observation)) }
    }

    /// The observer to put in `CloneServerConfiguration.sessionObserver`.
    public var cloneObserver: @Sendable (CloneSessionUpdate) -> Void {
        { [self] update in take(.clone(update)) }
    }

    /// The observer to give `FaultRules.observe`: a fault on a Clone write of a session goes into
    /// that session's history (faults on requests come with the broker's observation).
    public var faultObserver: @Sendable (FaultDecision) -> Void {
        { [self] decision in
            if decision.scope == .key, decision.session != nil { take(.fault(decision)) }
        }
    }

    /// The recorded history of `session`, oldest first; nil when the host has none.
    /// Everything observed before the call is decoded first.
    public func trace(session: String) -> SessionTrace? {
        decoding.sync { drain() }
        guard var trace = store.withLock({ $0.trace(session: session) }) else { return nil }
        trace.lostObservations = intake.withLock { $0.lost + $0.undecodable }
        return trace
    }

    /// The sessions with a history, most recently active first.
    public func sessions() -> [String] {
        decoding.sync { drain() }
        return store.withLock { $0.sessionIDs() }
    }

    /// The worker (`<plugin>/<pid>/<n>`) that last answered a request to a service starting with
    /// `service` in `session` (nil: in any session), and when: "the one serving session X", for
    /// faults aimed at a process by what it does.
    public func lastWorker(service: String, session: String?) -> (worker: String, atUnixNanos: Int64)? {
        decoding.sync { drain() }
        return store.withLock { $0.lastWorker(service: service, session: session) }
    }

    public var statistics: SessionHistoryStatistics {
        decoding.sync { drain() }
        var statistics = store.withLock { $0.statistics }
        let (lost, undecodable) = intake.withLock { ($0.lost, $0.undecodable) }
        statistics.lostObservations = lost
        statistics.undecodable = undecodable
        return statistics
    }

    /// Records decoded events directly (tests, and tools that replay a history).
    public func record(_ events: [TraceEvent]) {
        store.withLock { store in
            for event in events { store.record(event) }
        }
    }

    // MARK: Intake

    enum Observation: Sendable {
        case broker(BrokerObservation)
        case clone(CloneSessionUpdate)
        case fault(FaultDecision)
    }

    struct Intake {
        var queue: [Observation] = []
        /// A drain is scheduled (later) or running; the next observation needs no new one.
        var draining = false
        /// A drain is scheduled or running now, not later: a full batch needs no second one.
        var drainingNow = false
        var lost = 0
        var undecodable = 0
        /// Batches decoded so far (tests: observations close together share one wake-up).
        var batches = 0
    }

    /// Batches decoded so far; what arrived before the call is decoded first.
    var decodedBatches: Int {
        decoding.sync { drain() }
        return intake.withLock { $0.batches }
    }

    /// How long an observation may wait before the decoder takes it with the ones after it.
    /// Waking the decoder for each message cost the broker's thread a futex wake-up per message
    /// and the host about 2.5 ms of CPU per app journey; a reader of the history (`trace`,
    /// `sessions`, `lastWorker`, `statistics`) drains the queue first, so it never sees less.
    static let batchDelay = DispatchTimeInterval.milliseconds(20)
    /// A queue this long is decoded at once rather than after `batchDelay`, to keep it small.
    static let batchSize = 1_024

    /// Runs on the broker or Clone server thread: queue it, and make sure a drain will take it.
    private func take(_ observation: Observation) {
        enum Wake { case none, later, now }
        let wake = intake.withLock { intake -> Wake in
            guard intake.queue.count < limits.queuedObservations else {
                intake.lost += 1
                return .none
            }
            intake.queue.append(observation)
            if !intake.draining {
                intake.draining = true
                return .later
            }
            if intake.queue.count >= Self.batchSize, !intake.drainingNow {
                intake.drainingNow = true
                return .now
            }
            return .none
        }
        switch wake {
        case .none: break
        case .later: decoding.asyncAfter(deadline: .now() + Self.batchDelay) { [self] in drain() }
        case .now: decoding.async { [self] in drain() }
        }
    }

    /// Runs on `decoding` only.
    private func drain() {
        while true {
            let batch = intake.withLock { intake -> [Observation] in
                guard !intake.queue.isEmpty else {
                    intake.draining = false
                    return []
                }
                var batch: [Observation] = []
                swap(&batch, &intake.queue)
                intake.batches += 1
                return batch
            }
            guard !batch.isEmpty else { return }
            var events: [TraceEvent] = []
            var undecodable = 0
            matcher.withLock { matcher in
                for observation in batch {
                    switch observation {
                    case .broker(let seen): matcher.decode(seen, into: &events, undecodable: &undecodable)
                    case .clone(let update): TraceDecoding.decode(update, into: &events, undecodable: &undecodable)
                    case .fault(let decision): events.append(TraceEvent(fault: decision))
                    }
                }
            }
            if undecodable > 0 { intake.withLock { $0.undecodable += undecodable } }
            record(events)
        }
    }
}
