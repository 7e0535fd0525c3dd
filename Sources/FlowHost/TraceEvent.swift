import MessagePath

/// One thing that happened in a session, as the host saw it pass: an MDP request to a `vm.*` or
/// `coord.*` service and its reply, or a Clone change under `/s/<session>/`. `flowbus trace`
/// prints these; fields a kind does not use are nil (and absent from the JSON).
public struct TraceEvent: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable, CaseIterable {
        /// An `Intent` sent to a view model or a coordinator.
        case intent
        /// A `CoordinatorCall` (openSession, navigate, a child flow reporting to its parent…).
        case call
        /// A worker's answer to an intent or call.
        case reply
        /// The broker answered in the worker's place (no worker in time, queue full, too large).
        case refused
        /// A fault rule dropped the request before any worker saw it.
        case dropped
        /// A fault rule delayed, duplicated, reordered or damaged a request, or acted on a Clone
        /// write of the session (`message` says what and which rule).
        case fault
        /// A new `Navigation` value at `/s/<session>/nav`.
        case navigation
        /// A view model's `ViewState` at `/s/<session>/vm/<screen>`.
        case state
        /// The session's record at `/s/<session>/meta`.
        case record
        /// Any other value under `/s/<session>/`.
        case value
        /// A key deleted (session closed, view model reset) or expired.
        case deleted
    }

    public var kind: Kind
    public var session: String
    /// The host's wall clock when the broker or the Clone server handled it.
    public var atUnixNanos: Int64
    /// The Clone sequence of a change; nil for MDP traffic.
    public var sequence: UInt64?
    /// Who did it: the requester (Envelope.writer) of a request, the process (plugin) of the
    /// worker that replied, `broker` for a refusal, the writer of a Clone value.
    public var from: String
    /// The requester a reply went back to.
    public var to: String?
    /// The MDP service of a request or reply (`vm.checkout`, `coord.app`).
    public var service: String?
    /// The worker's full routing id (`<plugin>/<pid>/<n>`) of a reply.
    public var worker: String?
    /// The Clone key of a change.
    public var key: String?
    /// The intent's action or the call's method (also on its reply).
    public var action: String?
    /// The intent's screen kind, or the view model's screen kind of a state.
    public var screen: String?
    /// The version an intent was made on (screen_version, or expected_nav_version of a call);
    /// the version a reply reports; the Navigation.version or ViewState.screen_version of a value.
    public var version: UInt64?
    public var idempotencyKey: String?
    public var incarnation: UInt64?
    /// On a reply: the incarnation of the request it answers (the broker pairs them by socket),
    /// when that request said. Two incarnations' tries of one call share its key; this tells
    /// which of them a receiver answered.
    public var askedBy: UInt64?
    /// Whether a reply says the intent or call was applied.
    public var applied: Bool?
    /// The refusal of a reply: `STALE_INTENT: <message>`.
    public var error: String?
    /// A state's phase (`loading`, `success`…) and message.
    public var phase: String?
    public var message: String?
    /// A navigation value: the top screen, the shown stack (bottom first), the tab, the modal.
    public var top: String?
    public var stack: [String]?
    public var tab: String?
    public var modal: String?
    /// A session record: its user, its flow and whether it is open.
    public var user: String?
    public var flow: String?
    public var open: Bool?

    public init(kind: Kind, session: String, atUnixNanos: Int64, from: String) {
        self.kind = kind
        self.session = session
        self.atUnixNanos = atUnixNanos
        self.from = from
    }

    /// A fault a rule injected on a Clone write of the session.
    init(fault decision: FaultDecision) {
        self.init(kind: .fault, session: decision.session ?? "", atUnixNanos: decision.atUnixNanos, from: "fault")
        key = decision.subject
        message = "\(decision.effect) by fault rule \(decision.rule) (its message #\(decision.ordinal))"
    }

    /// Whether this is a request (intent or call) a worker should answer.
    public var isRequest: Bool { kind == .intent || kind == .call }
    /// Whether this is an answer to a request (a worker's reply or the broker's refusal).
    public var isAnswer: Bool { kind == .reply || kind == .refused }
}

/// The answer to the control request `trace`: one session's recorded history, oldest first.
public struct SessionTrace: Codable, Sendable, Equatable {
    public var session: String
    public var events: [TraceEvent]
    /// Events of this session the host recorded and later dropped (the per-session limit).
    public var droppedEvents: Int
    /// Whether the session was closed (its record deleted) when the trace was taken.
    public var closed: Bool
    public var limits: SessionHistoryLimits
    /// Observations of any session the host could not record (its decoder fell behind, or a
    /// body was no Envelope) since it started: when not 0, this trace may miss events.
    public var lostObservations: Int

    public init(session: String, events: [TraceEvent], droppedEvents: Int, closed: Bool, limits: SessionHistoryLimits, lostObservations: Int = 0) {
        self.session = session
        self.events = events
        self.droppedEvents = droppedEvents
        self.closed = closed
        self.limits = limits
        self.lostObservations = lostObservations
    }
}
