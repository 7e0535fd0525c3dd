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

    struct Entry: Codable {
        var failures: [Date] = []
        var lockedUntil: Date = .distantPast
        var lockouts = 0
        var lastSeen: Date = .distantPast
    }

    public let policy: Policy
    let entries = Mutex<[String: Entry]>([:])
    let refusedCount = Atomic<Int>(0)
    /// Where each change of a key is written (`keep(in:)`), nil: memory only.
    let journal = Mutex<Journal?>(nil)

    /// Receives each key's state as it changes (JSON), or nil when the key is forgotten.
    public typealias Journal = @Sendable (_ key: String, _ entry: Data?) -> Void

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
        let changed = entries.withLock { entries -> [(String, Entry?)] in
            var changed: [(String, Entry?)] = []
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
                changed.append((key, entry))
            }
            if entries.count > policy.maxKeys {
                changed += Self.evict(&entries, keeping: policy.maxKeys * 9 / 10, now: now).map { ($0, nil) }
            }
            return changed
        }
        write(changed)
    }

    /// A right try: the keys' wrong tries are forgotten (their lockout history too).
    public func recordSuccess(_ keys: [String]) {
        let forgotten = entries.withLock { entries in
            keys.filter { entries.removeValue(forKey: $0) != nil }
        }
        write(forgotten.map { ($0, nil) })
    }

    /// Writes every change from now on to `journal` — the services' record store, so the counts
    /// survive a restart and replicas sharing the store count each guess once, wherever it lands.
    public func keep(in journal: @escaping Journal) {
        self.journal.withLock { $0 = journal }
    }

    /// Sets one key as `keep(in:)` wrote it (nil: forgotten); an entry that does not decode is
    /// dropped (the key starts afresh, as after a restart without a journal).
    public func restore(_ key: String, _ entry: Data?) {
        let decoded = entry.flatMap { try? JSONDecoder().decode(Entry.self, from: $0) }
        entries.withLock { $0[key] = decoded }
    }

    func write(_ changes: [(String, Entry?)]) {
        guard !changes.isEmpty, let journal = journal.withLock({ $0 }) else { return }
        for (key, entry) in changes { journal(key, entry.flatMap { try? JSONEncoder().encode($0) }) }
    }

    /// Tries refused so far (for logs and tests).
    public var refused: Int { refusedCount.load(ordering: .relaxed) }

    /// Forgets all but `count` keys; returns the keys forgotten.
    static func evict(_ entries: inout [String: Entry], keeping count: Int, now: Date) -> [String] {
        // Unlocked keys first, the stalest first: a locked key is never forgotten before its time
        // unless nothing else is left.
        let order = entries.sorted { left, right in
            let leftLocked = left.value.lockedUntil > now, rightLocked = right.value.lockedUntil > now
            if leftLocked != rightLocked { return !leftLocked }
            return left.value.lastSeen < right.value.lastSeen
        }
        let forgotten = order.prefix(entries.count - count).map(\.key)
        for key in forgotten { entries[key] = nil }
        return forgotten
    }
}
