import Glibc
import Synchronization

/// What the message path does with one message.
public enum FaultVerdict: Sendable, Equatable {
    case deliver
    case drop(ruleID: String)
    case delay(ruleID: String, Duration)
    case duplicate(ruleID: String, copies: Int)
    /// Hold the message until `behind` later messages of the rule have passed (or its wait ends).
    case reorder(ruleID: String, behind: Int)
    case truncate(ruleID: String, bytes: Int)
    /// Flip `bytes` bytes at positions drawn from `seed` (`FaultVerdict.corrupt(_:bytes:seed:)`).
    case corrupt(ruleID: String, bytes: Int, seed: UInt64)
    /// Apply the write, then serve the key's previous value to subscribers again.
    case stale(ruleID: String)

    /// Cuts `frame` to `bytes` bytes.
    public static func truncate(_ frame: inout [UInt8], bytes: Int) {
        if frame.count > bytes { frame.removeLast(frame.count - bytes) }
    }

    /// Flips `bytes` bytes of `frame` at positions drawn from `seed`: the same seed, the same bytes.
    public static func corrupt(_ frame: inout [UInt8], bytes: Int, seed: UInt64) {
        guard !frame.isEmpty else { return }
        var random = SplitMix64(seed: seed)
        for _ in 0..<bytes {
            let position = Int(random.next() % UInt64(frame.count))
            frame[position] ^= UInt8(truncatingIfNeeded: random.next() | 1)
        }
    }
}

/// A request's session and method, which only the host can read from its body (the broker
/// knows no payload): asked only when a rule names a session or a method.
public struct FaultDetails: Sendable, Equatable {
    public var session: String?
    public var method: String?

    public init(session: String? = nil, method: String? = nil) {
        self.session = session
        self.method = method
    }
}

/// A rule with the counts of what it did.
public struct FaultRuleStatus: Sendable, Codable, Equatable {
    public var rule: FaultRule
    /// Messages that matched its target (before share, skip and limit).
    public var matched: Int
    /// Messages it acted on.
    public var fired: Int
}

/// The rules that sit in a message path, switchable at run time from any thread.
///
/// Costs one relaxed atomic load per message while no rule is set: the paths ask `isArmed`
/// before anything else. Every decision is a function of the seed, the rule's id and the
/// message's place among those the rule matched (its ordinal), never of the time or of other
/// rules' traffic: the same plan and seed on the same messages make the same decisions, which
/// the decision log (`decisions(after:)`) records in order.
public final class FaultRules: Sendable {
    private struct Installed {
        var rule: FaultRule
        var ruleHash: UInt64
        var matched = 0
        var fired = 0
        var triggered = 0
    }

    private struct State {
        var rules: [Installed] = []
        var seed: UInt64
        var log = DecisionLog(capacity: FaultRules.decisionCapacity)
    }

    /// The newest decisions kept; older ones are counted, not kept.
    public static let decisionCapacity = 200_000

    private let armed = Atomic<Bool>(false)
    private let state: Mutex<State>
    private let describe: (@Sendable ([UInt8]) -> FaultDetails)?
    private let observer = Mutex<(@Sendable (FaultDecision) -> Void)?>(nil)

    /// `seed` makes the decisions of a run repeatable; `describe` reads a request body's session
    /// and method for rules that target them (the host's Envelope decoder).
    public init(seed: UInt64 = 0x5EED_F10B, describe: (@Sendable ([UInt8]) -> FaultDetails)? = nil) {
        self.state = Mutex(State(seed: seed))
        self.describe = describe
    }

    /// True while at least one rule is set.
    @inline(__always)
    public var isArmed: Bool { armed.load(ordering: .relaxed) }

    /// The seed of the decisions to come.
    public var seed: UInt64 { state.withLock { $0.seed } }

    /// Starts over with `seed`: the rules' counts and the decision log are cleared, so a plan
    /// played again from here makes the same decisions.
    public func reset(seed: UInt64) {
        state.withLock { state in
            state.seed = seed
            state.log = DecisionLog(capacity: Self.decisionCapacity)
            for index in state.rules.indices {
                state.rules[index].matched = 0
                state.rules[index].fired = 0
                state.rules[index].triggered = 0
            }
        }
    }

    /// Called with each decision as it is made, on the thread of the message path (keep it short).
    public func observe(_ observer: (@Sendable (FaultDecision) -> Void)?) {
        self.observer.withLock { $0 = observer }
    }

    /// Adds a rule, replacing one with the same id (whose counts start again).
    public func install(_ rule: FaultRule) throws(FaultRuleError) {
        try rule.validate()
        state.withLock { state in
            state.rules.removeAll { $0.rule.id == rule.id }
            state.rules.append(Installed(rule: rule, ruleHash: Self.hash(rule.id)))
            armed.store(true, ordering: .releasing)
        }
    }

    /// Removes a rule; returns whether it was there.
    @discardableResult
    public func remove(id: String) -> Bool {
        state.withLock { state in
            let before = state.rules.count
            state.rules.removeAll { $0.rule.id == id }
            armed.store(!state.rules.isEmpty, ordering: .releasing)
            return state.rules.count != before
        }
    }

    public func removeAll() {
        state.withLock { state in
            state.rules.removeAll()
            armed.store(false, ordering: .releasing)
        }
    }

    public var status: [FaultRuleStatus] {
        state.withLock { state in
            state.rules.map { FaultRuleStatus(rule: $0.rule, matched: $0.matched, fired: $0.fired) }
        }
    }

    /// The decisions made after the first `index` of this run (0: all that are kept), and the
    /// number made in all: ask again with that number for the next ones.
    public func decisions(after index: Int = 0) -> (decisions: [FaultDecision], total: Int) {
        state.withLock { ($0.log.entries(after: index), $0.log.total) }
    }

    /// Logs a fault that is no message's verdict (a plan killed or stopped a process), so the
    /// decision log holds every fault of a run in order.
    public func record(scope: FaultScope, rule: String, subject: String, effect: String) {
        let decision = state.withLock { state in
            let decision = FaultDecision(rule: rule, ordinal: state.log.total + 1, scope: scope, subject: subject, session: nil,
                                         effect: effect, atUnixNanos: Self.wallNanos())
            state.log.append(decision)
            return decision
        }
        if let observer = observer.withLock({ $0 }) { observer(decision) }
    }

    /// The verdict for one message of `scope` whose subject (service name or key) is given, sent
    /// by `peer` (its User-Id, when known). `body` is read only when a rule targets a request's
    /// session or method.
    public func verdict(
        scope: FaultScope, subject: some Collection<UInt8>, peer: String? = nil, body: () -> [UInt8]? = { nil }
    ) -> FaultVerdict {
        guard isArmed else { return .deliver }
        var details: FaultDetails?
        func read() -> FaultDetails {
            if let details { return details }
            let read: FaultDetails
            if scope == .key {
                read = FaultDetails(session: Self.session(ofKey: subject))
            } else if let describe, let bytes = body() {
                read = describe(bytes)
            } else {
                read = FaultDetails()
            }
            details = read
            return read
        }
        let (verdict, decision) = state.withLock { state -> (FaultVerdict, FaultDecision?) in
            for index in state.rules.indices {
                let rule = state.rules[index].rule
                if let trigger = rule.after, state.rules[index].triggered < trigger.count {
                    if trigger.scope == scope, subject.starts(with: trigger.prefix.utf8),
                       trigger.method == nil || read().method == trigger.method {
                        state.rules[index].triggered += 1
                    }
                    continue
                }
                guard rule.scope == scope, subject.starts(with: rule.prefix.utf8) else { continue }
                if let wanted = rule.peer, !(peer ?? "").hasPrefix(wanted) { continue }
                if rule.session != nil || rule.method != nil {
                    let seen = read()
                    if let session = rule.session, seen.session != session { continue }
                    if let method = rule.method, seen.method != method { continue }
                }
                state.rules[index].matched += 1
                let ordinal = state.rules[index].matched
                if ordinal <= rule.skip { continue }
                if let limit = rule.limit, state.rules[index].fired >= limit { continue }
                let draws = Draws(seed: state.seed, rule: state.rules[index].ruleHash, ordinal: UInt64(ordinal))
                if rule.share < 1, draws.unit(0) >= rule.share { continue }
                state.rules[index].fired += 1
                let verdict = Self.verdict(rule, draws)
                let decision = FaultDecision(
                    rule: rule.id, ordinal: ordinal, scope: scope, subject: String(decoding: subject, as: UTF8.self),
                    session: read().session, effect: verdict.effectText, atUnixNanos: Self.wallNanos())
                state.log.append(decision)
                return (verdict, decision)
            }
            return (.deliver, nil)
        }
        if let decision, let observer = observer.withLock({ $0 }) { observer(decision) }
        return verdict
    }

    private static func verdict(_ rule: FaultRule, _ draws: Draws) -> FaultVerdict {
        switch rule.action {
        case .drop:
            return .drop(ruleID: rule.id)
        case .delay(let delay):
            let milliseconds = delay.milliseconds(draws.unit(1), draws.unit(2))
            return .delay(ruleID: rule.id, .microseconds(Int64((milliseconds * 1000).rounded())))
        case .duplicate(let copies):
            return .duplicate(ruleID: rule.id, copies: copies)
        case .reorder(let window):
            return .reorder(ruleID: rule.id, behind: 1 + Int(draws.unit(1) * Double(window)) % window)
        case .truncate(let bytes):
            return .truncate(ruleID: rule.id, bytes: bytes)
        case .corrupt(let bytes):
            return .corrupt(ruleID: rule.id, bytes: bytes, seed: draws.bits(3))
        case .stale:
            return .stale(ruleID: rule.id)
        }
    }

    /// The session of a key `/s/<id>/…`, else nil.
    static func session(ofKey key: some Collection<UInt8>) -> String? {
        BusAccess.wholeSession(Array(key.prefix(140)))
    }

    /// FNV-1a: a rule's id as a number, the same in every process and run.
    static func hash(_ text: String) -> UInt64 {
        var value: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in text.utf8 {
            value ^= UInt64(byte)
            value = value &* 0x0000_0100_0000_01B3
        }
        return value
    }

    static func wallNanos() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
    }
}

/// The random draws of one decision: a pure function of the seed, the rule and the ordinal.
struct Draws {
    let base: UInt64

    init(seed: UInt64, rule: UInt64, ordinal: UInt64) {
        var mix = SplitMix64(seed: seed ^ (rule &* 0x9E37_79B9_7F4A_7C15) ^ (ordinal &* 0xD1B5_4A32_D192_ED03))
        base = mix.next()
    }

    func bits(_ stream: UInt64) -> UInt64 {
        var mix = SplitMix64(seed: base &+ stream &* 0xA24B_AED4_963E_E407)
        return mix.next()
    }

    func unit(_ stream: UInt64) -> Double {
        Double(bits(stream) >> 11) * 0x1.0p-53
    }
}

/// A small, fast, seedable generator, so a fault run can be replayed.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A draw in 0..<1.
    public mutating func nextUnitDouble() -> Double {
        Double(next() >> 11) * 0x1.0p-53
    }
}
