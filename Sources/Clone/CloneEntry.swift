import Foundation

/// One key-value pair as a server or agent holds it.
public struct CloneEntry: Sendable, Equatable {
    public var key: String
    public var value: [UInt8]
    /// The global sequence of the KVPUB (or KVSYNC) that last set it.
    public var sequence: UInt64
    public var uuid: UUID?
    /// The writer's properties (a snapshot carries none, so entries from one have none), without
    /// the server's session chain (`sprev`), which its update carried.
    public var properties: CloneProperties

    public init(key: String, value: [UInt8], sequence: UInt64, uuid: UUID? = nil, properties: CloneProperties = []) {
        self.key = key
        self.value = value
        self.sequence = sequence
        self.uuid = uuid
        self.properties = properties
    }

    /// The value as UTF-8 text (for tools and tests).
    public var text: String { String(decoding: value, as: UTF8.self) }
}

/// Key bytes hashed with `KeyHash` and compared by `memcmp` (the standard library's compares a
/// byte at a time: some 7 instructions a byte). The server's map looks a key up for every write
/// it takes: SipHash over the bytes cost some 300 instructions there.
struct KeyBytes: Hashable {
    let bytes: [UInt8]

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    func hash(into hasher: inout Hasher) { hasher.combine(hashed) }

    func _rawHashValue(seed: Int) -> Int { KeyHash.mixed(hashed, seed: seed) }

    private var hashed: UInt64 { bytes.withUnsafeBytes { KeyHash.of($0) } }

    static func == (a: KeyBytes, b: KeyBytes) -> Bool { sameBytes(a.bytes, b.bytes) }

    var string: String { String(decoding: bytes, as: UTF8.self) }
}

/// The hash of a map's key (`KeyBytes`, `AgentKey`): its bytes taken eight at a time, each word
/// folded in with a multiply (a bijection of the state, so two keys of one length part only by
/// colliding words), then mixed with the table's seed (`Hashable._rawHashValue(seed:)`) instead of
/// a `Hasher` run over the bytes. A key of a dozen bytes costs two steps, where FNV-1a took one a
/// byte (and SipHash some 300 instructions). Not kept with the key: a key held no larger than its
/// bytes' reference (every process of the app holds a few keys a session). The keys come from the
/// process's own Clone peers (on a closed host, over authenticated connections): a set of keys
/// chosen to collide costs the map nothing a writer could not already cost it by writing that
/// many keys.
enum KeyHash {
    /// The bytes, eight at a time, and their count.
    @inline(__always)
    static func of(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        // The count folded in first, as a word of its own: XORed into the start it would cancel
        // against a last word that differs from another key's in the same bits. The last word
        // may take bytes already taken (`KeyWords`): the count tells the keys apart.
        var hash = step(0xcbf2_9ce4_8422_2325, UInt64(bytes.count))
        KeyWords.forEach(in: bytes, padding: 0) { word in
            hash = step(hash, word)
            return true
        }
        return hash
    }

    @inline(__always)
    private static func step(_ hash: UInt64, _ word: UInt64) -> UInt64 {
        let folded = (hash ^ word) &* 0x9e37_79b9_7f4a_7c15
        return folded ^ (folded >> 29)
    }

    /// `hash` mixed with `seed` (murmur3's finalizer), so that no two tables lay keys out alike.
    @inline(__always)
    static func mixed(_ hash: UInt64, seed: Int) -> Int {
        var mixed = hash ^ UInt64(UInt(bitPattern: seed))
        mixed ^= mixed >> 33
        mixed &*= 0xff51_afd7_ed55_8ccd
        mixed ^= mixed >> 33
        mixed &*= 0xc4ce_b9fe_1a85_ec53
        mixed ^= mixed >> 33
        return Int(truncatingIfNeeded: mixed)
    }
}

/// A key's bytes as 64-bit words, for the loops that read every key a process takes (its hash,
/// its check): the whole words in order, then, when the count is not a multiple of eight, the
/// last eight bytes (some of them read already); a key under eight bytes is one word, its bytes
/// first and `padding` after them.
enum KeyWords {
    /// Calls `body` with each word until it returns false; returns false if it did.
    @inline(__always)
    @discardableResult
    static func forEach(in bytes: UnsafeRawBufferPointer, padding: UInt8, _ body: (UInt64) -> Bool) -> Bool {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return true }
        guard bytes.count >= 8 else {
            var word = UInt64(padding) &* 0x0101_0101_0101_0101
            for index in 0..<bytes.count {
                let shift = 8 * UInt64(index)
                word = word & ~(0xFF << shift) | UInt64(bytes[index]) << shift
            }
            return body(word)
        }
        var offset = 0
        while offset + 8 <= bytes.count {
            guard body(base.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) else { return false }
            offset += 8
        }
        return offset == bytes.count || body(base.loadUnaligned(fromByteOffset: bytes.count - 8, as: UInt64.self))
    }
}

/// Whether `a` and `b` hold the same bytes, compared with `memcmp`.
@inline(__always)
func sameBytes(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    return a.withUnsafeBytes { x in
        b.withUnsafeBytes { y in x.count == 0 || x.baseAddress == y.baseAddress || memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0 }
    }
}

/// Whether `a` and `b` hold the same bytes, compared with `memcmp`.
@inline(__always)
func sameBytes(_ a: [UInt8], _ b: UnsafeRawBufferPointer) -> Bool {
    guard a.count == b.count else { return false }
    return a.withUnsafeBytes { x in x.count == 0 || memcmp(x.baseAddress!, b.baseAddress!, x.count) == 0 }
}
