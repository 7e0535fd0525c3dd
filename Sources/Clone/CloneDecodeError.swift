/// Why a message is not a valid 12/CHP command where it arrived.
public enum CloneDecodeError: Error, Sendable, Equatable, CustomStringConvertible {
    case wrongFrameCount(command: String, expected: Int, got: Int)
    case unknownCommand(String)
    case badSequenceLength(Int)
    case badUUIDLength(Int)
    case frameNotEmpty(command: String, frame: Int)
    case invalidKey(String)
    case reservedKey(String)
    case invalidSubtree(String)
    case malformedProperties(String)
    case valueTooLarge(size: Int, limit: Int)
    case oversize(bytes: Int, limit: Int)
    /// A KVSETS batch (`KVSetBatch`) that cannot be read to its end.
    case malformedBatch(String)

    /// The counter this error is counted under.
    public var kind: CloneBadInput {
        switch self {
        case .wrongFrameCount, .badSequenceLength, .badUUIDLength, .frameNotEmpty, .malformedBatch: .malformedFrames
        case .unknownCommand: .unknownCommand
        case .invalidKey: .invalidKey
        case .reservedKey: .reservedKey
        case .invalidSubtree: .invalidSubtree
        case .malformedProperties: .malformedProperties
        case .valueTooLarge, .oversize: .oversize
        }
    }

    public var description: String {
        switch self {
        case .wrongFrameCount(let command, let expected, let got):
            "\(command) has \(expected) frames in 12/CHP, this message has \(got); send the frames the RFC lists"
        case .unknownCommand(let name):
            "'\(name)' is not a 12/CHP command here; a snapshot request is ICANHAZ? followed by a subtree"
        case .badSequenceLength(let count):
            "frame 1 must be an 8-byte big-endian sequence number, it has \(count) bytes"
        case .badUUIDLength(let count):
            "frame 2 must be empty or a 16-byte UUID, it has \(count) bytes"
        case .frameNotEmpty(let command, let frame):
            "frame \(frame) of \(command) must be empty"
        case .invalidKey(let reason):
            "invalid key: \(reason); a key is printable ASCII starting with '/', at most 255 bytes"
        case .reservedKey(let key):
            "'\(key)' is a 12/CHP command name and cannot be used as a key; keys start with '/'"
        case .invalidSubtree(let reason):
            "invalid subtree: \(reason); a subtree is empty (everything) or like '/s/abc/' (slash, segments, slash)"
        case .malformedProperties(let reason):
            "malformed properties: \(reason); each property is one 'name=value' line ended by a newline"
        case .valueTooLarge(let size, let limit):
            "a value of \(size) bytes is over the limit of \(limit) bytes; store large data elsewhere and put a reference here"
        case .oversize(let bytes, let limit):
            "a message of \(bytes) bytes or more is over the limit of \(limit) bytes"
        case .malformedBatch(let reason):
            "malformed KVSETS batch: \(reason); the writes before it were taken, the rest of the batch dropped (a Flowbus agent's batches are read this way: check that the writer runs this Flowbus's version)"
        }
    }
}

/// The kinds of bad input the clone server and agent count.
public enum CloneBadInput: String, Sendable, Codable, CaseIterable {
    case malformedFrames
    case unknownCommand
    case invalidKey
    case reservedKey
    case invalidSubtree
    case malformedProperties
    case oversize
    /// A snapshot reply or update that did not fit what the agent was waiting for.
    case unexpected
}

/// What a Clone client accepts although 12/CHP lays it out otherwise, because the zguide's
/// reference servers (clonesrv5, clonesrv6 with kvmsg) send it. Counted, never fatal.
public enum CloneLeniency: String, Sendable, Codable, CaseIterable {
    /// KVSYNC with bytes in frame 2 (uuid) or 3 (properties): kvmsg sends the stored record's.
    case kvsyncFrames
    /// KTHXBAI with bytes in frame 2 or 3 (the Python kvmsg puts a new UUID in every message).
    case kthxbaiFrames
    /// HUGZ with bytes in frame 2 or 3.
    case hugzFrames
    /// KTHXBAI with an empty subtree frame while another subtree was asked for (the C clonesrv5
    /// and clonesrv6 send it empty); it ends the one snapshot in flight.
    case kthxbaiWithoutSubtree
}
