/// A key of an agent's map: its text, and a hash of its bytes made once, when the key is made.
///
/// The map looks a key up for every update it takes (ten subscribers, ten lookups an update).
/// A `String` key is hashed each time with SipHash over its bytes, some 300 instructions for a
/// key of a dozen bytes; this one is hashed once with FNV-1a (a few instructions a byte), and
/// the table's lookup mixes that with the table's seed (`_rawHashValue(seed:)`), without a
/// `Hasher`. The keys come from the agent's own Clone server (and, on a closed host, over an
/// authenticated connection), so a hash that a chosen set of keys could make collide costs
/// nothing that a writer could not already cost by writing that many keys.
struct AgentKey: Hashable, Comparable, Sendable {
    let text: String
    let hash: UInt64

    init(_ text: String) {
        var text = text
        hash = text.withUTF8 { Self.hash(UnsafeRawBufferPointer($0)) }
        self.text = text
    }

    /// `text` read from `bytes`, which hold it as UTF-8.
    init(_ text: String, bytes: UnsafeRawBufferPointer) {
        self.text = text
        hash = Self.hash(bytes)
    }

    static func == (a: AgentKey, b: AgentKey) -> Bool { a.hash == b.hash && a.text == b.text }

    static func < (a: AgentKey, b: AgentKey) -> Bool { a.text < b.text }

    func hash(into hasher: inout Hasher) { hasher.combine(hash) }

    func _rawHashValue(seed: Int) -> Int {
        // The seed mixed in (murmur3's finalizer), so that no two tables lay keys out alike.
        var mixed = hash ^ UInt64(UInt(bitPattern: seed))
        mixed ^= mixed >> 33
        mixed &*= 0xff51_afd7_ed55_8ccd
        mixed ^= mixed >> 33
        mixed &*= 0xc4ce_b9fe_1a85_ec53
        mixed ^= mixed >> 33
        return Int(truncatingIfNeeded: mixed)
    }

    /// FNV-1a, 64 bits.
    static func hash(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return hash
    }
}
