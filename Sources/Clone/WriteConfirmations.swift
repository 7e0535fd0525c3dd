import Foundation
import MessagePath
import ZeroMQ

/// The writes an agent sent and the server has not confirmed yet, due for another try in the
/// order they were sent. Only the newest write of a key is ever sent again: an older one a later
/// write replaced would undo it.
struct WriteConfirmations {
    struct Pending {
        var write: PreparedWrite
        var tries: Int
        var due: MonotonicTime
        /// Which queue entry is this write's current one (older entries are skipped).
        var ticket: UInt64
        /// Its place among the agent's writes (`CloneAgent.writesMade` when it was made).
        var sequence: UInt64
        /// Settled before its confirmation came: a newer write of its key was sent.
        var replaced = false
    }

    let firstWait: Duration
    let maxWait: Duration = .seconds(4)
    let maxTries: Int
    /// By write UUID (frame 2 of the KVSET).
    private var pending: [UUID: Pending] = [:]
    /// By key: the UUID of the newest write sent.
    private var newest: [String: UUID] = [:]
    /// (due, ticket, UUID) of every try, a min-heap on the due time.
    private var queue = DueHeap()
    private var tickets: UInt64 = 0
    private var settlement = Settlement()

    init(firstWait: Duration, maxTries: Int) {
        self.firstWait = firstWait
        self.maxTries = maxTries
    }

    var count: Int { pending.count }

    /// Every write numbered up to this one is settled: confirmed, replaced by a newer write of
    /// its key, or given up (`CloneAgent.settle`).
    var settledThrough: UInt64 { settlement.through }

    /// Whether `uuid` still waits for its confirmation (a resend of one confirmed meanwhile need not go).
    func isWaiting(_ uuid: UUID) -> Bool { pending[uuid] != nil }

    /// The KVSET numbered `sequence` went to the collector for the first time.
    mutating func sentFirst(_ write: PreparedWrite, sequence: UInt64, now: MonotonicTime) {
        settlement.sent(sequence)
        // The newest write of a key settles the older ones still waiting: it is what the key will
        // hold. The key is hashed once for the look and the update (twice a write before).
        if let older = newest.updateValue(write.uuid, forKey: write.key), older != write.uuid,
           let index = pending.index(forKey: older), !pending.values[index].replaced {
            pending.values[index].replaced = true
            settlement.settle(pending.values[index].sequence)
        }
        // A write's UUID is new when it is first sent: nothing waits under it yet.
        schedule(write, tries: 1, sequence: sequence, replaced: false, now: now)
    }

    /// A KVSET not confirmed in time went to the collector again.
    mutating func sentAgain(_ write: PreparedWrite, now: MonotonicTime) {
        guard let earlier = pending[write.uuid] else { return }
        newest[write.key] = write.uuid
        schedule(write, tries: earlier.tries + 1, sequence: earlier.sequence, replaced: earlier.replaced, now: now)
    }

    private mutating func schedule(_ write: PreparedWrite, tries: Int, sequence: UInt64, replaced: Bool, now: MonotonicTime) {
        let uuid = write.uuid
        var wait = firstWait
        for _ in 1..<tries where wait < maxWait { wait = wait * 2 }
        tickets += 1
        let due = now + min(wait, maxWait)
        pending[uuid] = Pending(write: write, tries: tries, due: due, ticket: tickets, sequence: sequence, replaced: replaced)
        queue.push(DueHeap.Item(due: due, ticket: tickets, uuid: uuid))
    }

    /// The server confirmed `uuid`; false when it was not waiting (confirmed twice, or given up).
    mutating func confirm(_ uuid: UUID) -> Bool {
        guard let confirmed = pending.removeValue(forKey: uuid) else { return false }
        // The key hashed once: looked up, and taken out where it was found.
        if let index = newest.index(forKey: confirmed.write.key), newest.values[index] == uuid { newest.remove(at: index) }
        if !confirmed.replaced { settlement.settle(confirmed.sequence) }
        return true
    }

    enum Verdict {
        case resend(PreparedWrite)
        case abandon(PreparedWrite)
    }

    /// Writes whose wait ran out: to send again, or to give up after `maxTries`. A write a newer
    /// write of the same key replaced is dropped without a word.
    mutating func due(now: MonotonicTime) -> [Verdict] {
        var verdicts: [Verdict] = []
        while let (uuid, entry) = current(), entry.due <= now {
            queue.pop()
            guard newest[entry.write.key] == uuid else {
                pending[uuid] = nil
                if !entry.replaced { settlement.settle(entry.sequence) }
                continue
            }
            if entry.tries >= maxTries {
                pending[uuid] = nil
                newest[entry.write.key] = nil
                if !entry.replaced { settlement.settle(entry.sequence) }
                verdicts.append(.abandon(entry.write))
            } else {
                verdicts.append(.resend(entry.write))
            }
        }
        return verdicts
    }

    /// When the next try falls due, if a write is waiting.
    mutating func nextDue() -> MonotonicTime? {
        current()?.entry.due
    }

    /// The earliest try that is a write's current one, dropping those of confirmed or retried writes.
    private mutating func current() -> (uuid: UUID, entry: Pending)? {
        while let item = queue.first {
            if let entry = pending[item.uuid], entry.ticket == item.ticket { return (item.uuid, entry) }
            queue.pop()
        }
        return nil
    }
}

/// Which of an agent's numbered writes are settled, as one number: every write up to
/// `through` is. Writes are first sent in the order they are numbered; each settles once.
struct Settlement {
    /// Sent and not settled, in the order sent (settled ones are dropped from the front lazily).
    private var waiting: [UInt64] = []
    private var waitingStart = 0
    private var settledOutOfOrder: Set<UInt64> = []
    private var lastSent: UInt64 = 0

    var through: UInt64 {
        waitingStart < waiting.count ? waiting[waitingStart] - 1 : lastSent
    }

    mutating func sent(_ sequence: UInt64) {
        waiting.append(sequence)
        lastSent = max(lastSent, sequence)
    }

    mutating func settle(_ sequence: UInt64) {
        // Most writes settle in the order they were sent: the oldest waiting one moves the mark
        // on without going through the set.
        if waitingStart < waiting.count, waiting[waitingStart] == sequence {
            waitingStart += 1
        } else {
            settledOutOfOrder.insert(sequence)
        }
        while !settledOutOfOrder.isEmpty, waitingStart < waiting.count, settledOutOfOrder.remove(waiting[waitingStart]) != nil {
            waitingStart += 1
        }
        waiting.dropConsumed(&waitingStart)
    }
}

extension Array {
    /// For an array read from `start` on, as a queue: drops the elements before `start` once
    /// all are read, or once they are many, and moves `start` back accordingly.
    mutating func dropConsumed(_ start: inout Int) {
        if start == count {
            removeAll(keepingCapacity: true)
            start = 0
        } else if start > 4096 {
            removeFirst(start)
            start = 0
        }
    }
}

/// A binary min-heap of tries by due time (then by ticket, the order they were made).
struct DueHeap {
    struct Item {
        var due: MonotonicTime
        var ticket: UInt64
        var uuid: UUID

        func isBefore(_ other: Item) -> Bool { due < other.due || (due == other.due && ticket < other.ticket) }
    }

    private var items: [Item] = []

    var first: Item? { items.first }

    mutating func push(_ item: Item) {
        items.append(item)
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard items[child].isBefore(items[parent]) else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    mutating func pop() {
        guard !items.isEmpty else { return }
        items.swapAt(0, items.count - 1)
        items.removeLast()
        var parent = 0
        while true {
            let left = parent * 2 + 1, right = left + 1
            var smallest = parent
            if left < items.count, items[left].isBefore(items[smallest]) { smallest = left }
            if right < items.count, items[right].isBefore(items[smallest]) { smallest = right }
            guard smallest != parent else { return }
            items.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
