import Foundation
import MessagePath
import ZeroMQ

/// Where a message arrived, which decides what it may be: KVPUB and KVSET share one layout.
public enum CloneChannel: Sendable {
    /// The server's snapshot ROUTER (identity frame already removed): ICANHAZ.
    case snapshotRequest
    /// The client's snapshot DEALER: KVSYNC or KTHXBAI.
    case snapshotReply
    /// The client's subscriber: KVPUB or HUGZ.
    case publisher
    /// The server's collector: KVSET.
    case collector
}

extension CloneMessage {
    /// Decodes the frames of one message received on `channel`, exactly as 12/CHP lays it out.
    public static func decode(
        _ frames: [Frame], on channel: CloneChannel, maxValueBytes: Int = .max
    ) throws(CloneDecodeError) -> CloneMessage {
        try decode(frames, on: channel, maxValueBytes: maxValueBytes, liberal: false).message
    }

    /// Decodes as `decode`, but accepts what the zguide's reference servers send a client: any
    /// bytes in frames 2 and 3 (uuid, properties) of KVSYNC, KTHXBAI and HUGZ, where their kvmsg
    /// puts a UUID and the stored properties and 12/CHP has empty frames. Returns what it let
    /// through, for the caller to count. Only a client reads this way; what a Flowbus server
    /// sends and accepts stays exactly the RFC's.
    public static func decodeLiberally(
        _ frames: [Frame], on channel: CloneChannel, maxValueBytes: Int = .max
    ) throws(CloneDecodeError) -> (message: CloneMessage, tolerated: CloneLeniency?) {
        try decode(frames, on: channel, maxValueBytes: maxValueBytes, liberal: true)
    }

    private static func decode(
        _ frames: [Frame], on channel: CloneChannel, maxValueBytes: Int, liberal: Bool
    ) throws(CloneDecodeError) -> (message: CloneMessage, tolerated: CloneLeniency?) {
        switch channel {
        case .snapshotRequest:
            guard let first = frames.first, first == icanhazCommand else {
                throw .unknownCommand(frames.first?.printable ?? "")
            }
            guard frames.count == 2 else { throw .wrongFrameCount(command: "ICANHAZ?", expected: 2, got: frames.count) }
            try CloneKeyRules.validate(subtree: frames[1])
            return (.icanhaz(subtree: String(decoding: frames[1], as: UTF8.self)), nil)
        case .snapshotReply:
            if frames.first == kthxbaiCommand {
                try requireFiveFrames(frames, "KTHXBAI")
                let tolerated = try requireEmpty(frames, 2, 3, "KTHXBAI", orTolerate: liberal ? .kthxbaiFrames : nil)
                try CloneKeyRules.validate(subtree: frames[4])
                return (.kthxbai(sequence: try sequence(frames[1]), subtree: String(decoding: frames[4], as: UTF8.self)), tolerated)
            }
            try requireFiveFrames(frames, "KVSYNC")
            let tolerated = try requireEmpty(frames, 2, 3, "KVSYNC", orTolerate: liberal ? .kvsyncFrames : nil)
            let key = try validKey(frames[0])
            try checkValue(frames[4], maxValueBytes)
            return (.kvsync(key: key, sequence: try sequence(frames[1]), value: frames[4]), tolerated)
        case .publisher:
            if frames.first == hugzCommand {
                try requireFiveFrames(frames, "HUGZ")
                let tolerated = try requireEmpty(frames, 2, 3, "HUGZ", orTolerate: liberal ? .hugzFrames : nil)
                try requireEmpty(frames, 4, 4, "HUGZ", orTolerate: nil)
                return (.hugz(sequence: try sequence(frames[1])), tolerated)
            }
            return (.kvpub(try record(frames, "KVPUB", maxValueBytes)), nil)
        case .collector:
            return (.kvset(try record(frames, "KVSET", maxValueBytes)), nil)
        }
    }

    static func record(_ frames: [Frame], _ command: String, _ maxValueBytes: Int) throws(CloneDecodeError) -> CloneRecord {
        try requireFiveFrames(frames, command)
        return try record(key: frames[0], sequence: frames[1], uuid: frames[2], properties: frames[3], value: frames[4], maxValueBytes)
    }

    /// A KVPUB read where the subscriber socket holds it (`ZMQSocket.receiveParts`), with the
    /// checks of `decodeLiberally`: its key, sequence, UUID and properties, its value left in
    /// `parts[4]` for the agent's map to copy where it keeps it (no `CloneRecord`, no frames). Nil
    /// for a message of another shape (a HUGZ, a write's confirmation, a malformed one), which the
    /// caller decodes from frames as before.
    static func publishedHeader(
        _ parts: ReceivedParts, maxValueBytes: Int
    ) throws(CloneDecodeError) -> (key: String, sequence: UInt64, uuid: UUID?, properties: CloneProperties)? {
        // A key starts with `/`; HUGZ and `ACK/…` do not.
        guard parts.count == 5, !parts.truncated, parts[0].first == UInt8(ascii: "/") else { return nil }
        // In the order `record` checks a KVPUB's frames, so that a message with two faults is
        // refused for the same one: key, sequence, UUID, properties, value.
        let key = try validKey(parts[0])
        guard parts[1].count == 8 else { throw .badSequenceLength(parts[1].count) }
        let sequence = UInt64(bigEndian: parts[1].loadUnaligned(as: UInt64.self))
        let uuid: UUID?
        switch parts[2].count {
        case 0: uuid = nil
        // The 16 bytes loaded as the UUID, in one move.
        case 16: uuid = UUID(wire: parts[2])
        default: throw .badUUIDLength(parts[2].count)
        }
        let properties = parts[3].isEmpty ? CloneProperties() : try CloneProperties(decoding: Array(parts[3]))
        guard parts[4].count <= maxValueBytes else { throw .valueTooLarge(size: parts[4].count, limit: maxValueBytes) }
        return (key, sequence, uuid, properties)
    }

    /// The five frames of a KVPUB or KVSET, as arrays.
    private static func record(
        key: Frame, sequence: Frame, uuid: Frame, properties: Frame, value: Frame, _ maxValueBytes: Int
    ) throws(CloneDecodeError) -> CloneRecord {
        let text = try validKey(key)
        let number = try self.sequence(sequence)
        let id: UUID?
        switch uuid.count {
        case 0: id = nil
        case 16: id = UUID(frame: uuid)
        default: throw .badUUIDLength(uuid.count)
        }
        let decoded = properties.isEmpty ? CloneProperties() : try CloneProperties(decoding: properties)
        try checkValue(value, maxValueBytes)
        return CloneRecord(key: text, sequence: number, uuid: id, properties: decoded, value: value)
    }

    private static func requireFiveFrames(_ frames: [Frame], _ command: String) throws(CloneDecodeError) {
        guard frames.count == 5 else { throw .wrongFrameCount(command: command, expected: 5, got: frames.count) }
    }

    /// Throws for the first non-empty frame in `first...last`, or, given `leniency`, returns it instead.
    @discardableResult
    private static func requireEmpty(
        _ frames: [Frame], _ first: Int, _ last: Int, _ command: String, orTolerate leniency: CloneLeniency?
    ) throws(CloneDecodeError) -> CloneLeniency? {
        for index in first...last where !frames[index].isEmpty {
            guard let leniency else { throw .frameNotEmpty(command: command, frame: index) }
            return leniency
        }
        return nil
    }

    static func sequence(_ frame: some Collection<UInt8>) throws(CloneDecodeError) -> UInt64 {
        guard let value = UInt64(bigEndianFrame: frame) else { throw .badSequenceLength(frame.count) }
        return value
    }

    private static func validKey(_ frame: some Collection<UInt8>) throws(CloneDecodeError) -> String {
        try CloneKeyRules.validate(key: frame)
        return String(decoding: frame, as: UTF8.self)
    }

    /// The same, read where the socket holds the key: its bytes, checked printable ASCII, are
    /// copied into the string as they are (`String(decoding:)` would check them as UTF-8 again
    /// and repair them, some 60 instructions more a key).
    private static func validKey(_ frame: UnsafeRawBufferPointer) throws(CloneDecodeError) -> String {
        try CloneKeyRules.validate(key: frame)
        guard let base = frame.baseAddress, !frame.isEmpty else { return "" }
        return String(unsafeUninitializedCapacity: frame.count) { buffer in
            UnsafeMutableRawPointer(buffer.baseAddress!).copyMemory(from: base, byteCount: frame.count)
            return frame.count
        }
    }

    private static func checkValue(_ value: some Collection<UInt8>, _ limit: Int) throws(CloneDecodeError) {
        guard value.count <= limit else { throw .valueTooLarge(size: value.count, limit: limit) }
    }
}
