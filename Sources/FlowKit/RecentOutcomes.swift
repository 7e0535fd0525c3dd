/// The last `capacity` answers by key, oldest forgotten first: what lets a runtime answer a
/// retried request (same idempotency key) as it answered the first try. An empty key is never kept.
struct RecentOutcomes<Value> {
    let capacity: Int
    private var values: [String: Value] = [:]
    private var order: [String] = []
    private var oldest = 0

    init(capacity: Int) {
        precondition(capacity > 0, "remembering needs room for at least one answer")
        self.capacity = capacity
    }

    subscript(key: String) -> Value? {
        key.isEmpty ? nil : values[key]
    }

    /// Keeps `value` for `key` unless an answer is already kept for it (the first answer stands).
    mutating func remember(_ value: Value, for key: String) {
        guard !key.isEmpty, values[key] == nil else { return }
        values[key] = value
        if order.count < capacity {
            order.append(key)
        } else {
            values[order[oldest]] = nil
            order[oldest] = key
            oldest = (oldest + 1) % capacity
        }
    }
}
