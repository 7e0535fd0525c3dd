/// The values of the last `capacity` keys remembered, oldest forgotten first (a ring of keys
/// beside a dictionary): what a runtime keeps of recent answers, a server of recent deletes.
/// Inlinable, so that a caller in another module gets it specialized for its types: called
/// unspecialized, each look-up hashed and compared through the types' witnesses and looked up
/// their generic metadata at run time.
public struct RecentValues<Key: Hashable, Value> {
    public let capacity: Int
    @usableFromInline var values: [Key: Value] = [:]
    @usableFromInline var order: [Key] = []
    @usableFromInline var oldest = 0

    public init(capacity: Int) {
        precondition(capacity > 0, "remembering needs room for at least one value")
        self.capacity = capacity
    }

    @inlinable public subscript(key: Key) -> Value? { values[key] }

    /// Keeps `value` for `key`; a key already kept gets the new value and keeps its place.
    @inlinable public mutating func remember(_ value: Value, for key: Key) {
        if values.updateValue(value, forKey: key) != nil { return }
        if order.count < capacity {
            order.append(key)
        } else {
            values[order[oldest]] = nil
            order[oldest] = key
            oldest = (oldest + 1) % capacity
        }
    }

    /// Forgets `key`'s value now (its place in the ring is given up when its turn comes).
    @inlinable public mutating func forget(_ key: Key) { values[key] = nil }
}
