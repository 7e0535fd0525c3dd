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

/// The hash of a map's key (`KeyBytes`, `AgentKey`): FNV-1a over its bytes, mixed with the
/// table's seed (`Hashable._rawHashValue(seed:)`) instead of a `Hasher` run over the bytes. Not
/// kept with the key: a key held no larger than its bytes' reference (every process of the app
/// holds a few keys a session). The keys come from the process's own Clone peers (on a closed
/// host, over authenticated connections): a set of keys chosen to collide costs the map nothing
/// a writer could not already cost it by writing that many keys.
enum KeyHash {
    /// FNV-1a, 64 bits.
    @inline(__always)
    static func of(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return hash
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
