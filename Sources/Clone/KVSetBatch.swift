import Foundation

/// KVSETS: Flowbus's batch of KVSETs, from a Flowbus agent to a Flowbus server's collector.
///
/// 12/CHP sends every write as a KVSET of five frames; libzmq's cost is per frame and per
/// message, about as much on the way to the server as on the way from it. Writes an agent's
/// thread takes from its queue together (a view model's two copies of a state, a burst) go as
/// one message of two frames instead: `command`, then their entries packed one after the other.
/// The server reads each entry as it would a KVSET (the same checks, refusals and counters) and
/// publishes it as a KVPUB: subscribers, 12/CHP's and the zguide's included, see no difference.
///
/// Only a server that says it takes batches gets them: a Flowbus collector subscribes to
/// `command` beside "" (`ZMQ_SUBSCRIBE`), which reaches the agent's writer (an XPUB) as a
/// subscription; an agent that never sees it sends KVSETs, as the RFC has them. A single write
/// still goes as a KVSET, and so does one too large to share a message (`maxValueBytes`).
///
/// An entry: the key's length (1 byte) and the key, the write's UUID (16 bytes), the properties'
/// length (4 bytes, big-endian) and the properties frame, the value's length (4 bytes) and the
/// value. The sequence frame, zero in every KVSET, is left out.
public enum KVSetBatch {
    /// Frame 0 of a batch, and the subscription that says a server takes them: never a key,
    /// which starts with `/`.
    public static let command: [UInt8] = Array("KVSETS".utf8)
    /// At most this many writes go in one batch...
    public static let maxWrites = 64
    /// ...and at most this many bytes of entries (well under the collector's limit, which is the
    /// largest value plus 64 KiB).
    public static let maxBytes = 32 * 1024
    /// A write with a larger value goes alone, as a KVSET.
    public static let maxValueBytes = 4 * 1024

    /// The bytes an entry takes besides its key, properties and value.
    public static let entryOverhead = 1 + 16 + 4 + 4

    /// Whether frame 0 of a message names a batch.
    @inline(__always)
    public static func isBatch(_ frame: UnsafeRawBufferPointer) -> Bool {
        frame.count == command.count && command.withUnsafeBytes { $0.elementsEqual(frame) }
    }

    /// One write of a batch, read where the message holds it.
    public struct Entry {
        public var key: UnsafeRawBufferPointer
        public var uuid: UnsafeRawBufferPointer
        public var properties: UnsafeRawBufferPointer
        public var value: UnsafeRawBufferPointer
    }

    /// Reads a batch's entries in order, from its second frame.
    public struct Reader {
        private let frame: UnsafeRawBufferPointer
        private var offset = 0
        /// Entries read so far.
        public private(set) var count = 0

        public init(_ frame: UnsafeRawBufferPointer) {
            self.frame = frame
        }

        /// The next entry; nil after the last. Throws `.malformedBatch` when the frame ends inside
        /// an entry or a length runs past it: the entries read before it stand, the rest cannot be read.
        public mutating func next() throws(CloneDecodeError) -> Entry? {
            guard offset < frame.count else {
                if count == 0 { throw .malformedBatch("the batch holds no write") }
                return nil
            }
            let key = try take(Int(frame[offset]), after: 1, what: "key")
            let uuid = try take(16, after: 0, what: "UUID")
            let properties = try take(try length(), after: 4, what: "properties")
            let value = try take(try length(), after: 4, what: "value")
            count += 1
            return Entry(key: key, uuid: uuid, properties: properties, value: value)
        }

        /// A 4-byte big-endian length at `offset`.
        private func length() throws(CloneDecodeError) -> Int {
            guard frame.count - offset >= 4 else {
                throw .malformedBatch("write \(count + 1) is cut short at byte \(offset) of \(frame.count)")
            }
            return (0..<4).reduce(0) { $0 << 8 | Int(frame[offset + $1]) }
        }

        /// `size` bytes after a `prefix`-byte length at `offset`.
        private mutating func take(_ size: Int, after prefix: Int, what: String) throws(CloneDecodeError) -> UnsafeRawBufferPointer {
            let start = offset + prefix
            guard start <= frame.count, size <= frame.count - start else {
                throw .malformedBatch("write \(count + 1)'s \(what) (\(size) bytes at byte \(start)) runs past the batch's \(frame.count) bytes")
            }
            offset = start + size
            return UnsafeRawBufferPointer(rebasing: frame[start..<(start + size)])
        }
    }

    /// The bytes one entry takes.
    public static func entrySize(keyBytes: Int, propertiesBytes: Int, valueBytes: Int) -> Int {
        entryOverhead + keyBytes + propertiesBytes + valueBytes
    }

    /// Writes packed into a batch's second frame, as an agent packs them (tests, fuzzing): each
    /// key at most 255 bytes, each UUID 16.
    public static func packed(_ writes: [(key: [UInt8], uuid: [UInt8], properties: [UInt8], value: [UInt8])]) -> [UInt8] {
        var buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 1)
        defer { buffer.deallocate() }
        var length = 0
        for write in writes {
            guard let uuid = UUID(frame: write.uuid) else { preconditionFailure("a batched write's UUID of \(write.uuid.count) bytes, not 16") }
            length = write.key.withUnsafeBytes { key in
                write.properties.withUnsafeBytes { properties in
                    write.value.withUnsafeBytes { append(key: key, uuid: uuid, properties: properties, value: $0, into: &buffer, at: length) }
                }
            }
        }
        return Array(buffer[..<length])
    }

    /// Appends an entry at `offset` of `buffer`, made larger when it is too small (its bytes
    /// before `offset` kept); returns the offset after it. `key` is at most 255 bytes (checked
    /// when the write was queued).
    public static func append(
        key: UnsafeRawBufferPointer, uuid: UUID, properties: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer,
        into buffer: inout UnsafeMutableRawBufferPointer, at offset: Int
    ) -> Int {
        precondition(key.count <= 255, "a batched key longer than 255 bytes")
        let end = offset + entrySize(keyBytes: key.count, propertiesBytes: properties.count, valueBytes: value.count)
        if buffer.count < end {
            let larger = UnsafeMutableRawBufferPointer.allocate(byteCount: max(end, 2 * buffer.count), alignment: 1)
            if offset > 0 { larger.copyMemory(from: UnsafeRawBufferPointer(rebasing: buffer[0..<offset])) }
            buffer.deallocate()
            buffer = larger
        }
        var at = offset
        func put(_ bytes: UnsafeRawBufferPointer) {
            guard bytes.count > 0 else { return }
            UnsafeMutableRawBufferPointer(rebasing: buffer[at..<(at + bytes.count)]).copyMemory(from: bytes)
            at += bytes.count
        }
        func putLength(_ length: Int) {
            buffer[at] = UInt8(truncatingIfNeeded: length >> 24)
            buffer[at + 1] = UInt8(truncatingIfNeeded: length >> 16)
            buffer[at + 2] = UInt8(truncatingIfNeeded: length >> 8)
            buffer[at + 3] = UInt8(truncatingIfNeeded: length)
            at += 4
        }
        buffer[at] = UInt8(key.count)
        at += 1
        put(key)
        withUnsafeBytes(of: uuid.uuid) { put($0) }
        putLength(properties.count)
        put(properties)
        putLength(value.count)
        put(value)
        return at
    }
}
