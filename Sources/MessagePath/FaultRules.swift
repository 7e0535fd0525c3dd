import Synchronization

/// Where a fault rule applies: MDP requests by service name, or CHP updates by key prefix.
public enum FaultScope: String, Sendable, Codable, CaseIterable {
    case service
    case key
}

/// What a rule does to a message it matches. Only `drop` exists so far; delay, duplicate
/// and reorder will join it here, and the broker's and clone server's delivery paths are
/// already written to act on a verdict rather than on a rule.
public enum FaultAction: Sendable, Codable, Equatable {
    /// Drops this share (0...1) of the matching messages.
    case drop(share: Double)
}

/// One rule: an action on the messages of one scope whose subject starts with `prefix`.
public struct FaultRule: Sendable, Codable, Equatable, Identifiable {
    public var id: String
    public var scope: FaultScope
    public var prefix: String
    public var action: FaultAction

    public init(id: String, scope: FaultScope, prefix: String, action: FaultAction) {
        self.id = id
        self.scope = scope
        self.prefix = prefix
        self.action = action
    }
}

/// What the message path does with one message.
public enum FaultVerdict: Sendable, Equatable {
    case deliver
    case drop(ruleID: String)
}

/// A rule with the counts of what it did.
public struct FaultRuleStatus: Sendable, Codable, Equatable {
    public var rule: FaultRule
    public var matched: Int
    public var dropped: Int
}

public enum FaultRuleError: Error, CustomStringConvertible, Equatable {
    case invalidShare(Double)
    case emptyID

    public var description: String {
        switch self {
        case .invalidShare(let share):
            "a drop share is a number from 0 to 1 (0.25 drops a quarter of the messages); got \(share)"
        case .emptyID:
            "a fault rule needs an id, so that it can be listed and removed later"
        }
    }
}

/// The rules that sit in a message path, switchable at run time from any thread.
///
/// Costs one relaxed atomic load per message while no rule is set: the paths ask
/// `isArmed` before anything else.
public final class FaultRules: Sendable {
    private struct Installed {
        var rule: FaultRule
        var matched = 0
        var dropped = 0
        var random: SplitMix64
    }

    private let armed = Atomic<Bool>(false)
    private let installed = Mutex<[Installed]>([])
    private let seed: UInt64

    /// `seed` makes the drops of a run repeatable.
    public init(seed: UInt64 = 0x5EED_F10B) {
        self.seed = seed
    }

    /// True while at least one rule is set.
    @inline(__always)
    public var isArmed: Bool { armed.load(ordering: .relaxed) }

    /// Adds a rule, replacing one with the same id.
    public func install(_ rule: FaultRule) throws(FaultRuleError) {
        guard !rule.id.isEmpty else { throw .emptyID }
        if case .drop(let share) = rule.action, !(0...1).contains(share) { throw .invalidShare(share) }
        installed.withLock { rules in
            rules.removeAll { $0.rule.id == rule.id }
            let ruleSeed = seed ^ UInt64(rules.count + 1)
            rules.append(Installed(rule: rule, random: SplitMix64(seed: ruleSeed)))
            armed.store(true, ordering: .releasing)
        }
    }

    /// Removes a rule; returns whether it was there.
    @discardableResult
    public func remove(id: String) -> Bool {
        installed.withLock { rules in
            let before = rules.count
            rules.removeAll { $0.rule.id == id }
            armed.store(!rules.isEmpty, ordering: .releasing)
            return rules.count != before
        }
    }

    public func removeAll() {
        installed.withLock { rules in
            rules.removeAll()
            armed.store(false, ordering: .releasing)
        }
    }

    public var status: [FaultRuleStatus] {
        installed.withLock { rules in
            rules.map { FaultRuleStatus(rule: $0.rule, matched: $0.matched, dropped: $0.dropped) }
        }
    }

    /// The verdict for one message of `scope` whose subject (service name or key) is given.
    public func verdict(scope: FaultScope, subject: some Collection<UInt8>) -> FaultVerdict {
        guard isArmed else { return .deliver }
        return installed.withLock { rules in
            for index in rules.indices where rules[index].rule.scope == scope
                && subject.starts(with: rules[index].rule.prefix.utf8) {
                rules[index].matched += 1
                switch rules[index].rule.action {
                case .drop(let share):
                    if rules[index].random.nextUnitDouble() < share {
                        rules[index].dropped += 1
                        return .drop(ruleID: rules[index].rule.id)
                    }
                }
            }
            return .deliver
        }
    }
}

/// A small, fast, seedable generator, so a fault run can be replayed.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func nextUnitDouble() -> Double {
        Double(next() >> 11) * 0x1.0p-53
    }
}
