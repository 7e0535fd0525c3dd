import Foundation
import Synchronization

/// Limits guesses — passwords, verification codes — per account and per peer (the session
/// asking): after `maxFailures` wrong tries within `window`, the key is locked for `lockout`,
/// doubled at each new lockout up to `maxLockout`. A 6-digit code valid for ten minutes then
/// gets at most a handful of guesses, not the thousands a second an unguarded service takes.
///
/// Memory is bounded: at most `maxKeys` keys are tracked; past that, the stalest go first.
public final class AttemptLimiter: Sendable {
    public struct Policy: Sendable {
        public var maxFailures: Int
        public var window: TimeInterval
        public var lockout: TimeInterval
        public var maxLockout: TimeInterval
        public var maxKeys: Int

        public init(maxFailures: Int = 5, window: TimeInterval = 300, lockout: TimeInterval = 60, maxLockout: TimeInterval = 900, maxKeys: Int = 100_000) {
            self.maxFailures = maxFailures
            self.window = window
            self.lockout = lockout
            self.maxLockout = maxLockout
            self.maxKeys = maxKeys
        }
    }

    struct Entry {
        var failures: [Date] = []
        var lockedUntil: Date = .distantPast
        var lockouts = 0
        var lastSeen: Date = .distantPast
    }

    public let policy: Policy
    let entries = Mutex<[String: Entry]>([:])
    let refusedCount = Atomic<Int>(0)

    public init(policy: Policy = Policy()) {
        self.policy = policy
    }

    /// The key of an account (compared without case) and of a peer.
    public static func account(_ email: String) -> String { "account:" + email.trimmingCharacters(in: .whitespaces).lowercased() }
    public static func peer(_ session: String) -> String { "peer:" + session }

    /// Seconds until every key may try again; nil when all may try now. A refusal is counted.
    public func wait(for keys: [String], now: Date = Date()) -> TimeInterval? {
        let wait = entries.withLock { entries in
            keys.compactMap { entries[$0].map { $0.lockedUntil.timeIntervalSince(now) } }.filter { $0 > 0 }.max()
        }
        if wait != nil { refusedCount.add(1, ordering: .relaxed) }
        return wait
    }

    /// Notes a wrong try for each key; a key at its limit is locked.
    public func recordFailure(_ keys: [String], now: Date = Date()) {
        entries.withLock { entries in
            for key in keys {
                var entry = entries[key] ?? Entry()
                entry.failures = entry.failures.filter { now.timeIntervalSince($0) < policy.window } + [now]
                entry.lastSeen = now
                if entry.failures.count >= policy.maxFailures {
                    let lock = min(policy.lockout * pow(2, Double(entry.lockouts)), policy.maxLockout)
                    entry.lockedUntil = now.addingTimeInterval(lock)
                    entry.lockouts += 1
                    entry.failures = []
                }
                entries[key] = entry
            }
            if entries.count > policy.maxKeys { Self.evict(&entries, keeping: policy.maxKeys * 9 / 10, now: now) }
        }
    }

    /// A right try: the keys' wrong tries are forgotten (their lockout history too).
    public func recordSuccess(_ keys: [String]) {
        entries.withLock { entries in
            for key in keys { entries[key] = nil }
        }
    }

    /// Tries refused so far (for logs and tests).
    public var refused: Int { refusedCount.load(ordering: .relaxed) }

    static func evict(_ entries: inout [String: Entry], keeping count: Int, now: Date) {
        // Unlocked keys first, the stalest first: a locked key is never forgotten before its time
        // unless nothing else is left.
        let order = entries.sorted { left, right in
            let leftLocked = left.value.lockedUntil > now, rightLocked = right.value.lockedUntil > now
            if leftLocked != rightLocked { return !leftLocked }
            return left.value.lastSeen < right.value.lastSeen
        }
        for (key, _) in order.prefix(entries.count - count) { entries[key] = nil }
    }
}
