import MessagePath

/// The last `capacity` answers by key, oldest forgotten first: what lets a runtime answer a
/// retried request (same idempotency key) as it answered the first try. An empty key is never kept.
struct RecentOutcomes<Value> {
    private var values: RecentValues<String, Value>

    init(capacity: Int) {
        values = RecentValues(capacity: capacity)
    }

    subscript(key: String) -> Value? {
        key.isEmpty ? nil : values[key]
    }

    /// Keeps `value` for `key` unless an answer is already kept for it (the first answer stands).
    mutating func remember(_ value: Value, for key: String) {
        guard !key.isEmpty, values[key] == nil else { return }
        values.remember(value, for: key)
    }
}
