import MessagePath
import ZeroMQ

/// The writes an agent sent and the server has not confirmed yet, due for another try in the
/// order they were sent. Only the newest write of a key is ever sent again: an older one a later
/// write replaced would undo it.
struct WriteConfirmations {
    struct Pending {
        var frames: [Frame]
        var tries: Int
        var due: MonotonicTime
        /// Which queue entry is this write's current one (older entries are skipped).
        var ticket: UInt64
    }

    let firstWait: Duration
    let maxWait: Duration = .seconds(4)
    let maxTries: Int
    /// By write UUID (frame 2 of the KVSET).
    private var pending: [[UInt8]: Pending] = [:]
    /// By key: the UUID of the newest write sent.
    private var newest: [[UInt8]: [UInt8]] = [:]
    /// (due, ticket, UUID) of every try, a min-heap on the due time.
    private var queue = DueHeap()
    private var tickets: UInt64 = 0

    init(firstWait: Duration, maxTries: Int) {
        self.firstWait = firstWait
        self.maxTries = maxTries
    }

    var count: Int { pending.count }

    /// A KVSET went to the collector (the first time or again).
    mutating func sent(_ frames: [Frame], now: MonotonicTime) {
        guard frames.count == 5 else { return }
        let uuid = frames[2]
        let tries = (pending[uuid]?.tries ?? 0) + 1
        var wait = firstWait
        for _ in 1..<tries where wait < maxWait { wait = wait * 2 }
        tickets += 1
        let due = now + min(wait, maxWait)
        pending[uuid] = Pending(frames: frames, tries: tries, due: due, ticket: tickets)
        newest[frames[0]] = uuid
        queue.push(DueHeap.Item(due: due, ticket: tickets, uuid: uuid))
    }

    /// The server confirmed `uuid`; false when it was not waiting (confirmed twice, or given up).
    mutating func confirm(_ uuid: [UInt8]) -> Bool {
        guard let confirmed = pending.removeValue(forKey: uuid) else { return false }
        if newest[confirmed.frames[0]] == uuid { newest[confirmed.frames[0]] = nil }
        return true
    }

    enum Verdict {
        case resend([Frame])
        case abandon([Frame])
    }

    /// Writes whose wait ran out: to send again, or to give up after `maxTries`. A write a newer
    /// write of the same key replaced is dropped without a word.
    mutating func due(now: MonotonicTime) -> [Verdict] {
        var verdicts: [Verdict] = []
        while let (uuid, entry) = current(), entry.due <= now {
            queue.pop()
            guard newest[entry.frames[0]] == uuid else {
                pending[uuid] = nil
                continue
            }
            if entry.tries >= maxTries {
                pending[uuid] = nil
                newest[entry.frames[0]] = nil
                verdicts.append(.abandon(entry.frames))
            } else {
                verdicts.append(.resend(entry.frames))
            }
        }
        return verdicts
    }

    /// When the next try falls due, if a write is waiting.
    mutating func nextDue() -> MonotonicTime? {
        current()?.entry.due
    }

    /// The earliest try that is a write's current one, dropping those of confirmed or retried writes.
    private mutating func current() -> (uuid: [UInt8], entry: Pending)? {
        while let item = queue.first {
            if let entry = pending[item.uuid], entry.ticket == item.ticket { return (item.uuid, entry) }
            queue.pop()
        }
        return nil
    }
}

/// A binary min-heap of tries by due time (then by ticket, the order they were made).
struct DueHeap {
    struct Item {
        var due: MonotonicTime
        var ticket: UInt64
        var uuid: [UInt8]

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
