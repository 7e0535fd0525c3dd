import AppStore
import Foundation

extension AttemptLimiter {
    /// Counts wrong passwords and codes in `records` too (`attempt` records by key), and follows
    /// them there: a restart forgets none, and replicas sharing the store count each guess once,
    /// whichever one it reaches. A count written inside a call commits with the call.
    public func keep(in records: RecordStore, kind: String = "attempt") {
        keep { [weak records] key, entry in
            if let entry { try? records?.put(kind, key, entry) } else { try? records?.delete(kind, key) }
        }
        records.follow(kind) { [weak self] key, entry in self?.restore(key, entry) }
    }
}
