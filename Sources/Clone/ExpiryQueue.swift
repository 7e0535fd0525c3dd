import MessagePath

/// A min-heap of ttl deadlines. An item is stale when its key was written again since
/// (its sequence no longer matches), so overwrites never need to search the heap.
struct ExpiryQueue {
    struct Item {
        var deadline: MonotonicTime
        var sequence: UInt64
        var key: KeyBytes
    }

    private var heap: [Item] = []

    var isEmpty: Bool { heap.isEmpty }
    var count: Int { heap.count }
    var nextDeadline: MonotonicTime? { heap.first?.deadline }

    mutating func push(_ item: Item) {
        heap.append(item)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].deadline < heap[parent].deadline else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes and returns the earliest item if its deadline is at or before `now`.
    mutating func popDue(now: MonotonicTime) -> Item? {
        guard let first = heap.first, first.deadline <= now else { return nil }
        let last = heap.removeLast()
        if heap.isEmpty { return first }
        heap[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < heap.count && heap[left].deadline < heap[smallest].deadline { smallest = left }
            if right < heap.count && heap[right].deadline < heap[smallest].deadline { smallest = right }
            if smallest == parent { break }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
        return first
    }
}
