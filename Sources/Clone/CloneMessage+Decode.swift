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
    /// Decodes the frames of one message received on `channel`.
    public static func decode(
        _ frames: [Frame], on channel: CloneChannel, maxValueBytes: Int = .max
    ) throws(CloneDecodeError) -> CloneMessage {
        switch channel {
        case .snapshotRequest:
            guard let first = frames.first, first == icanhazCommand else {
                throw .unknownCommand(frames.first?.printable ?? "")
            }
            guard frames.count == 2 else { throw .wrongFrameCount(command: "ICANHAZ?", expected: 2, got: frames.count) }
            try CloneKeyRules.validate(subtree: frames[1])
            return .icanhaz(subtree: String(decoding: frames[1], as: UTF8.self))
        case .snapshotReply:
            if frames.first == kthxbaiCommand {
                try requireFiveFrames(frames, "KTHXBAI")
                try requireEmpty(frames, 2, 3, "KTHXBAI")
                try CloneKeyRules.validate(subtree: frames[4])
                return .kthxbai(sequence: try sequence(frames[1]), subtree: String(decoding: frames[4], as: UTF8.self))
            }
            try requireFiveFrames(frames, "KVSYNC")
            try requireEmpty(frames, 2, 3, "KVSYNC")
            let key = try validKey(frames[0])
            try checkValue(frames[4], maxValueBytes)
            return .kvsync(key: key, sequence: try sequence(frames[1]), value: frames[4])
        case .publisher:
            if frames.first == hugzCommand {
                try requireFiveFrames(frames, "HUGZ")
                try requireEmpty(frames, 2, 4, "HUGZ")
                _ = try sequence(frames[1])
                return .hugz
            }
            return .kvpub(try record(frames, "KVPUB", maxValueBytes))
        case .collector:
            return .kvset(try record(frames, "KVSET", maxValueBytes))
        }
    }

    static func record(_ frames: [Frame], _ command: String, _ maxValueBytes: Int) throws(CloneDecodeError) -> CloneRecord {
        try requireFiveFrames(frames, command)
        let key = try validKey(frames[0])
        let sequence = try sequence(frames[1])
        let uuid: UUID?
        switch frames[2].count {
        case 0: uuid = nil
        case 16: uuid = UUID(frame: frames[2])
        default: throw .badUUIDLength(frames[2].count)
        }
        let properties = frames[3].isEmpty ? CloneProperties() : try CloneProperties(decoding: frames[3])
        try checkValue(frames[4], maxValueBytes)
        return CloneRecord(key: key, sequence: sequence, uuid: uuid, properties: properties, value: frames[4])
    }

    private static func requireFiveFrames(_ frames: [Frame], _ command: String) throws(CloneDecodeError) {
        guard frames.count == 5 else { throw .wrongFrameCount(command: command, expected: 5, got: frames.count) }
    }

    private static func requireEmpty(_ frames: [Frame], _ first: Int, _ last: Int, _ command: String) throws(CloneDecodeError) {
        for index in first...last where !frames[index].isEmpty {
            throw .frameNotEmpty(command: command, frame: index)
        }
    }

    static func sequence(_ frame: Frame) throws(CloneDecodeError) -> UInt64 {
        guard let value = UInt64(bigEndianFrame: frame) else { throw .badSequenceLength(frame.count) }
        return value
    }

    private static func validKey(_ frame: Frame) throws(CloneDecodeError) -> String {
        try CloneKeyRules.validate(key: frame)
        return String(decoding: frame, as: UTF8.self)
    }

    private static func checkValue(_ value: Frame, _ limit: Int) throws(CloneDecodeError) {
        guard value.count <= limit else { throw .valueTooLarge(size: value.count, limit: limit) }
    }
}
