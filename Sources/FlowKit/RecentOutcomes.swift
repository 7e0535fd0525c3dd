import MessagePath
import SwiftProtobuf

/// The last `capacity` answers by key, oldest forgotten first: what lets a runtime answer a
/// retried request (same idempotency key) as it answered the first try. An empty key is never kept.
///
/// A key is kept as 128 bits of it (`OutcomeKey`), not as its text: a coordinator keeps 1,024
/// answers of each kind, and their keys (a session and a client's idempotency key, some 50
/// bytes with their string's header) were a third of that.
struct RecentOutcomes<Value> {
    private var values: RecentValues<OutcomeKey, Value>

    init(capacity: Int) {
        values = RecentValues(capacity: capacity)
    }

    subscript(key: String) -> Value? {
        key.isEmpty ? nil : values[OutcomeKey(key)]
    }

    /// Keeps `value` for `key` unless an answer is already kept for it (the first answer stands).
    mutating func remember(_ value: Value, for key: String) {
        guard !key.isEmpty else { return }
        let kept = OutcomeKey(key)
        guard values[kept] == nil else { return }
        values.remember(value, for: kept)
    }
}

extension RecentOutcomes where Value == [UInt8] {
    /// The answer kept for `key`, decoded; nil when none is (or it no longer decodes).
    subscript<Answer: SwiftProtobuf.Message>(key: String, as type: Answer.Type) -> Answer? {
        self[key].flatMap { try? Answer(serializedBytes: $0) }
    }

    /// Keeps `answer` encoded: a reply's few bytes rather than its message's whole layout (a
    /// `CoordinatorReply` is over 100 bytes before any of its fields is set).
    mutating func remember<Answer: SwiftProtobuf.Message>(_ answer: Answer, for key: String) {
        guard let bytes: [UInt8] = try? answer.serializedBytes() else { return }
        remember(bytes, for: key)
    }
}

/// 128 bits of a key: two SipHash values of it under the process's random seed, each with a
/// different first byte. Two keys are taken for one only if both 64-bit halves collide, about
/// once in 2^128 pairs, and a caller cannot aim at another key without knowing the seed.
struct OutcomeKey: Hashable {
    let high: UInt64
    let low: UInt64

    init(_ text: String) {
        var first = Hasher()
        first.combine(UInt8(1))
        first.combine(text)
        var second = Hasher()
        second.combine(UInt8(2))
        second.combine(text)
        high = UInt64(bitPattern: Int64(first.finalize()))
        low = UInt64(bitPattern: Int64(second.finalize()))
    }
}
