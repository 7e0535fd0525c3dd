/// The last `capacity` keys inserted, for membership tests: older ones are forgotten first.
struct RecentKeys<Key: Hashable> {
    private var members: Set<Key> = []
    private var order = FIFOQueue<Key>()
    let capacity: Int

    init(capacity: Int) {
        precondition(capacity > 0, "RecentKeys needs room for at least one key")
        self.capacity = capacity
    }

    var count: Int { members.count }

    mutating func insert(_ key: Key) {
        guard members.insert(key).inserted else { return }
        order.append(key)
        // Bounded by insertions, not members: removed keys still hold their place until then.
        while order.count > capacity, let oldest = order.popFirst() {
            members.remove(oldest)
        }
    }

    /// Removes `key`; true if it was there.
    mutating func remove(_ key: Key) -> Bool {
        // Its entry in `order` stays until it reaches the front; a key inserted again meanwhile
        // is then forgotten early, which costs one bad-input count at worst.
        members.remove(key) != nil
    }
}
