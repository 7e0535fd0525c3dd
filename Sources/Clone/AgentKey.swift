/// A key of an agent's map: its text, and its hash made once, when the key is made (`KeyHash`).
///
/// The map looks a key up for every update it takes (ten subscribers, ten lookups an update).
/// A `String` key is hashed each time with SipHash over its bytes, some 300 instructions for a
/// key of a dozen bytes; this one is hashed once, a live update's where the socket holds it.
struct AgentKey: Hashable, Comparable, Sendable {
    let text: String
    let hash: UInt64

    init(_ text: String) {
        var text = text
        hash = text.withUTF8 { KeyHash.of(UnsafeRawBufferPointer($0)) }
        self.text = text
    }

    /// `text` read from `bytes`, which hold it as UTF-8.
    init(_ text: String, bytes: UnsafeRawBufferPointer) {
        self.text = text
        hash = KeyHash.of(bytes)
    }

    static func == (a: AgentKey, b: AgentKey) -> Bool { a.hash == b.hash && a.text == b.text }

    static func < (a: AgentKey, b: AgentKey) -> Bool { a.text < b.text }

    func hash(into hasher: inout Hasher) { hasher.combine(hash) }

    func _rawHashValue(seed: Int) -> Int { KeyHash.mixed(hash, seed: seed) }
}
