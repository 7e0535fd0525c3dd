import Foundation
import ZeroMQ

/// A key-value record as KVPUB and KVSET carry it.
public struct CloneRecord: Sendable, Equatable {
    public var key: String
    public var sequence: UInt64
    public var uuid: UUID?
    public var properties: CloneProperties
    /// Empty means "delete the key".
    public var value: [UInt8]

    public init(key: String, sequence: UInt64 = 0, uuid: UUID? = nil, properties: CloneProperties = [], value: [UInt8]) {
        self.key = key
        self.sequence = sequence
        self.uuid = uuid
        self.properties = properties
        self.value = value
    }
}

/// The commands of 12/CHP, named as the RFC names them.
public enum CloneMessage: Sendable, Equatable {
    /// Client → server on the snapshot port: "ICANHAZ?", subtree.
    case icanhaz(subtree: String)
    /// Server → client on the snapshot port: one key-value pair of the snapshot.
    case kvsync(key: String, sequence: UInt64, value: [UInt8])
    /// Server → client on the snapshot port: the end of the snapshot.
    case kthxbai(sequence: UInt64, subtree: String)
    /// Server → clients on the publisher port.
    case kvpub(CloneRecord)
    /// Client → server on the collector port.
    case kvset(CloneRecord)
    /// Server → clients on the publisher port when idle. A Flowbus server sends sequence 0, as the
    /// RFC's layout has it; the zguide's clonesrv6 sends its current sequence.
    case hugz(sequence: UInt64)

    static let icanhazCommand = Array("ICANHAZ?".utf8)
    static let kthxbaiCommand = Array("KTHXBAI".utf8)
    static let hugzCommand = Array("HUGZ".utf8)

    /// The frames on the wire (without the ROUTER's identity frame).
    public var frames: [Frame] {
        switch self {
        case .icanhaz(let subtree):
            [Self.icanhazCommand, Array(subtree.utf8)]
        case .kvsync(let key, let sequence, let value):
            [Array(key.utf8), sequence.bigEndianFrame, [], [], value]
        case .kthxbai(let sequence, let subtree):
            [Self.kthxbaiCommand, sequence.bigEndianFrame, [], [], Array(subtree.utf8)]
        case .kvpub(let record), .kvset(let record):
            record.frames
        case .hugz(let sequence):
            [Self.hugzCommand, sequence.bigEndianFrame, [], [], []]
        }
    }
}

extension CloneRecord {
    var frames: [Frame] {
        [Array(key.utf8), sequence.bigEndianFrame, uuid?.frame ?? [], properties.encoded, value]
    }
}

extension UInt64 {
    /// Eight bytes in network order, as CHP's sequence frames.
    var bigEndianFrame: Frame {
        withUnsafeBytes(of: bigEndian) { Array($0) }
    }

    /// Reads an 8-byte network-order frame (an array, or the bytes a socket holds).
    init?(bigEndianFrame frame: some Collection<UInt8>) {
        guard frame.count == 8 else { return nil }
        var value: UInt64 = 0
        for byte in frame { value = value << 8 | UInt64(byte) }
        self = value
    }
}

extension UUID {
    var frame: Frame {
        withUnsafeBytes(of: uuid) { Array($0) }
    }

    /// Reads a 16-byte frame (an array, or the bytes a socket holds).
    init?(frame: some Collection<UInt8>) {
        guard frame.count == 16 else { return nil }
        var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        // One copy of the 16 bytes where they are contiguous (a byte at a time cost 230
        // instructions an update in a subscriber).
        withUnsafeMutableBytes(of: &bytes) { target in target.copyBytes(from: frame) }
        self = UUID(uuid: bytes)
    }

    /// Reads 16 bytes where the socket holds them, loaded as the UUID itself: a UUID is its 16
    /// bytes (`BitwiseCopyable`, in their order), and `UUID(uuid:)` is a call into Foundation
    /// of some 57 instructions, on every update a subscriber takes. The test of UUID frames
    /// checks it against the UUID written.
    @inline(__always)
    init(wire bytes: UnsafeRawBufferPointer) {
        precondition(bytes.count == 16, "a UUID is 16 bytes")
        self = bytes.loadUnaligned(as: UUID.self)
    }
}
