/// A key of an agent's map: its text, hashed with `KeyHash` over its UTF-8.
///
/// The map looks a key up for every update it takes (ten subscribers, ten lookups an update).
/// A `String` key is hashed with SipHash over its bytes, some 300 instructions for a key of a
/// dozen bytes. No larger than the `String`: every process of the app holds a few keys a session.
struct AgentKey: Hashable, Comparable, Sendable {
    let text: String

    init(_ text: String) { self.text = text }

    static func == (a: AgentKey, b: AgentKey) -> Bool { a.text == b.text }

    static func < (a: AgentKey, b: AgentKey) -> Bool { a.text < b.text }

    func hash(into hasher: inout Hasher) { hasher.combine(hashed) }

    func _rawHashValue(seed: Int) -> Int { KeyHash.mixed(hashed, seed: seed) }

    private var hashed: UInt64 {
        // Read where the string holds its bytes (a short one: copied onto the stack), without
        // the copy and its retain that `withUTF8` needs. Written out here, not through a helper
        // taking a closure (as the writer's `withUTF8(of:)`): through one, the hash became a
        // closure called from both paths, some 30 instructions more for every update a
        // subscriber takes (clone-rate, ten subscribers, under callgrind).
        if let hash = text.utf8.withContiguousStorageIfAvailable({ KeyHash.of(UnsafeRawBufferPointer($0)) }) { return hash }
        var text = text
        return text.withUTF8 { KeyHash.of(UnsafeRawBufferPointer($0)) }
    }
}
