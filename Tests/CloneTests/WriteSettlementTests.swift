@testable import Clone
import Foundation
import MessagePath
import Testing

/// What an agent tells `settle` waiters: every write numbered up to `settledThrough` is
/// confirmed, or replaced by a newer write of its key. Checked against a plain model of that
/// rule, with writes confirmed in every kind of order.
@Suite("Writes settled in and out of order")
struct WriteSettlementTests {
    /// The largest n such that 1...n are all settled (0 when 1 is not).
    static func mark(_ settled: Set<UInt64>) -> UInt64 {
        var mark: UInt64 = 0
        while settled.contains(mark + 1) { mark += 1 }
        return mark
    }

    @Test func settlementFollowsTheOldestUnsettledWrite() {
        var generator = SystemRandomNumberGenerator()
        for round in 0..<200 {
            let count = UInt64.random(in: 1...40, using: &generator)
            var settlement = Settlement()
            for sequence in 1...count { settlement.sent(sequence) }
            // In order, reversed, or shuffled, with some writes settled twice.
            var order = Array(1...count)
            switch round % 3 {
            case 0: break
            case 1: order.reverse()
            default: order.shuffle(using: &generator)
            }
            if round % 4 == 0 { order.insert(order[order.count / 2], at: order.count - 1) }
            var settled: Set<UInt64> = []
            for sequence in order {
                settlement.settle(sequence)
                settled.insert(sequence)
                #expect(settlement.through == Self.mark(settled), "round \(round), order \(order)")
            }
            #expect(settlement.through == count)
        }
    }

    @Test func confirmationsSettleAWriteOnceConfirmedOrReplaced() {
        var generator = SystemRandomNumberGenerator()
        for round in 0..<100 {
            var confirmations = WriteConfirmations(firstWait: .seconds(1), maxTries: 3)
            let keys = ["/k/a", "/k/b", "/k/c", "/k/d"]
            let count = Int.random(in: 1...30, using: &generator)
            var writes: [(uuid: UUID, key: String, sequence: UInt64)] = []
            var newestOfKey: [String: UInt64] = [:]
            var settled: Set<UInt64> = []
            let now = MonotonicTime(nanoseconds: 1_000_000_000)
            for index in 0..<count {
                let key = keys.randomElement(using: &generator)!
                var write = PreparedWrite(key: key, uuid: UUID(), leading: [], value: Array("v\(index)".utf8))
                write.count = UInt64(index + 1)
                confirmations.sentFirst(write, sequence: write.count, now: now)
                // A newer write of a key settles the one it replaced.
                if let older = newestOfKey[key] { settled.insert(older) }
                newestOfKey[key] = write.count
                writes.append((write.uuid, key, write.count))
                #expect(confirmations.settledThrough == Self.mark(settled), "round \(round) after sending \(index + 1)")
            }
            for write in writes.shuffled(using: &generator) {
                let first = confirmations.confirm(write.uuid)
                let second = confirmations.confirm(write.uuid)
                #expect(first && !second, "round \(round): a write confirmed once, and not twice")
                settled.insert(write.sequence)
                #expect(confirmations.settledThrough == Self.mark(settled), "round \(round)")
            }
            #expect(confirmations.count == 0)
            #expect(confirmations.settledThrough == UInt64(count))
            // Nothing is due again: every write was confirmed.
            let due = confirmations.due(now: MonotonicTime(nanoseconds: now.nanoseconds + 60_000_000_000))
            #expect(due.isEmpty)
        }
    }
}
