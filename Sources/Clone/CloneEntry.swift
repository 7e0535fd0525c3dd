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

/// Key bytes with a hash that feeds the whole buffer to the hasher at once, and equality by
/// `memcmp` (the standard library's compares a byte at a time: some 7 instructions a byte).
struct KeyBytes: Hashable {
    var bytes: [UInt8]

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    func hash(into hasher: inout Hasher) {
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }

    static func == (a: KeyBytes, b: KeyBytes) -> Bool { sameBytes(a.bytes, b.bytes) }

    var string: String { String(decoding: bytes, as: UTF8.self) }
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
