/// A first-in first-out queue over an array with a moving head: O(1) push and pop,
/// storage compacted once the consumed part outgrows the live part.
struct FIFOQueue<Element> {
    private var storage: [Element] = []
    private var head = 0

    var count: Int { storage.count - head }
    var isEmpty: Bool { head == storage.count }
    var first: Element? { isEmpty ? nil : storage[head] }

    mutating func append(_ element: Element) {
        storage.append(element)
    }

    mutating func popFirst() -> Element? {
        guard head < storage.count else { return nil }
        let element = storage[head]
        head += 1
        if head == storage.count {
            storage.removeAll(keepingCapacity: storage.count < 1024)
            head = 0
        } else if head >= 64 && head * 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        }
        return element
    }

    /// Removes every element matching `predicate` (O(n); for rare events such as a worker's death).
    mutating func removeAll(where predicate: (Element) -> Bool) {
        storage.removeFirst(head)
        head = 0
        storage.removeAll(where: predicate)
    }

    var elements: ArraySlice<Element> { storage[head...] }
}
