import AccountKit
import Foundation
import Synchronization
import Testing

/// The guess limiter's journal: what `keep(in:)` writes restores the same locks in another
/// limiter (a restarted process, another replica), and forgotten keys are written as deletions.
@Suite struct AttemptLimiterJournalTests {
    final class Journal: Sendable {
        let written = Mutex<[String: Data]>([:])
        var keep: AttemptLimiter.Journal {
            { [self] key, entry in written.withLock { $0[key] = entry } }
        }
    }

    @Test func aLockWrittenToTheJournalHoldsInTheLimiterRestoredFromIt() {
        let journal = Journal()
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let first = AttemptLimiter()
        first.keep(in: journal.keep)
        for _ in 0..<first.policy.maxFailures { first.recordFailure(["account:ana", "peer:s1"], now: now) }
        #expect(first.wait(for: ["account:ana"], now: now) != nil)

        let second = AttemptLimiter()
        for (key, entry) in journal.written.withLock({ $0 }) { second.restore(key, entry) }
        let wait = second.wait(for: ["account:ana"], now: now.addingTimeInterval(1))
        #expect(wait.map { $0 > 0 && $0 <= second.policy.lockout } == true, "\(String(describing: wait))")

        // A right try forgets the key: the journal drops it, and a limiter restored from it is free.
        first.recordSuccess(["account:ana"])
        #expect(journal.written.withLock { $0["account:ana"] } == nil)
        #expect(journal.written.withLock { $0["peer:s1"] } != nil)
        second.restore("account:ana", nil)
        #expect(second.wait(for: ["account:ana"], now: now.addingTimeInterval(1)) == nil)
    }

    @Test func keysForgottenForRoomAreDeletedFromTheJournal() {
        let journal = Journal()
        let limiter = AttemptLimiter(policy: .init(maxKeys: 10))
        limiter.keep(in: journal.keep)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        for index in 0..<11 { limiter.recordFailure(["peer:\(index)"], now: now.addingTimeInterval(Double(index))) }
        // Past ten keys, the stalest are forgotten down to nine: the journal holds what memory holds.
        #expect(journal.written.withLock { $0.keys.count } == 9)
        #expect(journal.written.withLock { $0["peer:0"] } == nil)
        #expect(journal.written.withLock { $0["peer:10"] } != nil)
    }
}
