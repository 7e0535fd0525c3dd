/// One fault a rule injected: which rule, on the how-many-th message it matched, what message,
/// and what it did. `line` leaves out the time, so two runs of one plan and seed compare equal.
public struct FaultDecision: Sendable, Codable, Equatable {
    public var rule: String
    /// The message's place among those the rule matched, from 1.
    public var ordinal: Int
    public var scope: FaultScope
    /// The service name or key.
    public var subject: String
    public var session: String?
    /// What was done: `drop`, `delay 12.500ms`, `duplicate x2`, `reorder behind 3`…
    public var effect: String
    public var atUnixNanos: Int64

    public init(rule: String, ordinal: Int, scope: FaultScope, subject: String, session: String?, effect: String, atUnixNanos: Int64) {
        self.rule = rule
        self.ordinal = ordinal
        self.scope = scope
        self.subject = subject
        self.session = session
        self.effect = effect
        self.atUnixNanos = atUnixNanos
    }

    /// `<rule> #<ordinal> <scope> <subject> [session=<id>] <effect>`: the decision without its time.
    public var line: String {
        "\(rule) #\(ordinal) \(scope.rawValue) \(subject)\(session.map { " session=\($0)" } ?? "") \(effect)"
    }
}

extension FaultVerdict {
    /// The rule that decided, nil for `deliver`.
    public var ruleID: String? {
        switch self {
        case .deliver: nil
        case .drop(let id), .delay(let id, _), .duplicate(let id, _), .reorder(let id, _), .truncate(let id, _), .corrupt(let id, _, _), .stale(let id): id
        }
    }

    /// The effect as the decision log writes it.
    public var effectText: String {
        switch self {
        case .deliver: "deliver"
        case .drop: "drop"
        case .delay(_, let duration): "delay \(Self.milliseconds(duration))ms"
        case .duplicate(_, let copies): "duplicate x\(copies)"
        case .reorder(_, let behind): "reorder behind \(behind)"
        case .truncate(_, let bytes): "truncate to \(bytes) bytes"
        case .corrupt(_, let bytes, let seed): "corrupt \(bytes) bytes (seed \(seed))"
        case .stale: "previous value served again"
        }
    }

    /// Milliseconds with three decimals, written the same way on every machine.
    static func milliseconds(_ duration: Duration) -> String {
        let micros = Int64(duration.wholeNanoseconds / 1000)
        let fraction = String(micros % 1000)
        return "\(micros / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
    }
}

/// The newest decisions, in order, with the count of all made.
struct DecisionLog {
    private var ring: [FaultDecision] = []
    private var start = 0
    let capacity: Int
    private(set) var total = 0

    init(capacity: Int) {
        self.capacity = capacity
    }

    mutating func append(_ decision: FaultDecision) {
        total += 1
        if ring.count < capacity {
            ring.append(decision)
        } else {
            ring[start] = decision
            start = (start + 1) % capacity
        }
    }

    /// The kept decisions whose number (from 1) is above `index`.
    func entries(after index: Int) -> [FaultDecision] {
        let firstKept = total - ring.count
        let skip = max(0, index - firstKept)
        guard skip < ring.count else { return [] }
        return (skip..<ring.count).map { ring[(start + $0) % ring.count] }
    }
}

/// What a message path's fault rules did, by kind (drops are counted on their own, as before).
public struct FaultTally: Sendable, Codable, Equatable {
    public var delayed = 0
    public var duplicated = 0
    public var reordered = 0
    /// Messages truncated or corrupted.
    public var damaged = 0
    /// Worker heartbeats, or every command of a partitioned worker, held back.
    public var heartbeatsHeld = 0
    /// Clone values served stale after a write.
    public var staleServed = 0

    public init() {}

    public var total: Int { delayed + duplicated + reordered + damaged + heartbeatsHeld + staleServed }

    /// Counts `verdict` (a drop is not counted here).
    public mutating func count(_ verdict: FaultVerdict) {
        switch verdict {
        case .deliver, .drop: break
        case .delay: delayed += 1
        case .duplicate: duplicated += 1
        case .reorder: reordered += 1
        case .truncate, .corrupt: damaged += 1
        case .stale: staleServed += 1
        }
    }
}
