import MessagePath
import ZeroMQ

/// Why a message is not valid 7/MDP. Each case says which rule of the RFC it breaks.
public enum MDPDecodeError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The message has no frames after the peer identity.
    case empty
    /// Frame 0 must be empty (the RFC's "Frame 0: Empty frame").
    case missingEmptyFrame
    /// Frame 1 is neither "MDPC01" nor "MDPW01" (first bytes kept for the log).
    case wrongHeader(Frame)
    /// Fewer frames than the command needs.
    case truncated(command: String, frames: Int, atLeast: Int)
    /// A client REQUEST or REPLY ends at its service name: 7/MDP gives it at least one body frame.
    case missingBody(command: String)
    /// More frames than a fixed-size command has (READY is 4 frames, or 5 with a credit, HEARTBEAT and DISCONNECT are 3).
    case extraFrames(command: String, frames: Int, expected: Int)
    /// Frame 2 of an MDP/Worker command is not one byte from 0x01 to 0x05 (first bytes kept).
    case unknownCommand(Frame)
    /// Frame 4 of a worker REQUEST or REPLY must be the empty envelope delimiter.
    case missingEnvelopeDelimiter
    /// The service name frame is empty.
    case emptyServiceName
    /// The client address frame of a worker REQUEST or REPLY is empty.
    case emptyClientAddress
    /// READY's fifth frame (Flowbus's credit extension) is not `credit=N` with N from 1 to `MDP.maxCredit`.
    case invalidCredit(Frame)

    /// The statistics bucket this error is counted in.
    public var kind: BadInputKind {
        switch self {
        case .wrongHeader: .wrongHeader
        case .unknownCommand: .unknownCommand
        default: .malformedFrames
        }
    }

    public var description: String {
        switch self {
        case .empty:
            "empty message; an MDP command starts with an empty frame, then MDPC01 or MDPW01"
        case .missingEmptyFrame:
            "frame 0 is not empty; MDP commands start with an empty frame (a DEALER must add it itself)"
        case .wrongHeader(let header):
            "frame 1 is \(header.printable), expected MDPC01 (client) or MDPW01 (worker)"
        case .truncated(let command, let frames, let atLeast):
            "\(command) has \(frames) frames, needs at least \(atLeast) (see 7/MDP)"
        case .missingBody(let command):
            "\(command) has no body frame after the service name; 7/MDP gives it at least one (a Flowbus request is exactly one Envelope frame, Protocols/README.md §2)"
        case .extraFrames(let command, let frames, _) where command == "READY":
            "READY has \(frames) frames; it has 4, or 5 with Flowbus's credit=N frame (see 7/MDP and Protocols/README.md)"
        case .extraFrames(let command, let frames, let expected):
            "\(command) has \(frames) frames, must have exactly \(expected) (see 7/MDP)"
        case .unknownCommand(let command):
            "worker command frame is \(command.printable), expected one byte 0x01 (READY) to 0x05 (DISCONNECT)"
        case .missingEnvelopeDelimiter:
            "frame 4 of a worker REQUEST/REPLY must be the empty delimiter after the client address"
        case .emptyServiceName:
            "the service name frame is empty; name a service such as vm.checkout"
        case .emptyClientAddress:
            "the client address frame of a worker REQUEST/REPLY is empty; send back the address the REQUEST carried"
        case .invalidCredit(let frame):
            "READY's fifth frame is \(frame.printable); Flowbus reads it as credit=N with N from 1 to \(MDP.maxCredit) (decimal, no leading zero), or leave it out for one request at a time"
        }
    }
}

/// The kinds of bad input the broker counts.
public enum BadInputKind: String, Codable, Sendable, CaseIterable {
    /// Not shaped like any MDP command: missing empty frame, truncated, extra frames, empty names.
    case malformedFrames
    /// Frame 1 is not MDPC01 or MDPW01.
    case wrongHeader
    /// An MDPW01 command byte outside 0x01...0x05.
    case unknownCommand
    /// A valid command at the wrong time (REPLY before READY, a second READY, ...): answered by DISCONNECT.
    case unexpectedCommand
    /// Larger than the broker's message limit.
    case oversize
    /// An mmi.* service the broker does not implement, or a request whose service never got a worker.
    case unknownService
}
