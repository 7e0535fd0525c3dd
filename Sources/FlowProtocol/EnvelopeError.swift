/// Why bytes could not be used as a Flowbus envelope, with what to do about it.
public enum EnvelopeError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The bytes do not end with their check, or it disagrees with them: cut short or changed
    /// on the way (`WireCheck`). The sender sends the same bytes again.
    case damaged(reason: String)
    /// The bytes are not a protobuf `flowbus.v1.Envelope`, or the envelope has no version (0).
    case malformed(reason: String)
    /// The envelope's version is newer than this receiver understands.
    case unknownVersion(got: UInt32, supported: UInt32)
    /// The envelope holds another payload type than the one asked for.
    case wrongKind(expected: String, got: String)
    /// The payload bytes do not decode as the type `kind` names.
    case malformedPayload(kind: String, reason: String)
    /// A message could not be serialized (only a >2 GiB message can do this).
    case unencodable(kind: String, reason: String)

    /// The code to put in an `Error` reply about this failure.
    public var code: ErrorCode {
        switch self {
        case .damaged: .damaged
        case .malformed, .wrongKind, .malformedPayload: .malformed
        case .unknownVersion: .unknownVersion
        case .unencodable: .internal
        }
    }

    /// What happened.
    public var message: String {
        switch self {
        case .damaged(let reason):
            "The message arrived damaged and was not used: \(reason)."
        case .malformed(let reason):
            "The message body is not a valid flowbus.v1.Envelope: \(reason)."
        case .unknownVersion(let got, let supported):
            "The envelope has schema version \(got), but this receiver supports versions up to \(supported)."
        case .wrongKind(let expected, let got):
            "The envelope holds a '\(got.isEmpty ? "(no kind)" : got)' payload where a '\(expected)' was expected."
        case .malformedPayload(let kind, let reason):
            "The envelope's payload does not decode as '\(kind)': \(reason)."
        case .unencodable(let kind, let reason):
            "A '\(kind)' message could not be serialized: \(reason)."
        }
    }

    /// What to do about it.
    public var hint: String {
        switch self {
        case .damaged:
            "Send the same bytes again (Flowbus peers do so at once). If it keeps happening, the sender writes no check: every envelope ends with the CRC-32C of its bytes, field 11 (Protocols/README.md §5)."
        case .malformed:
            "Send exactly one body frame holding a serialized flowbus.v1.Envelope with version set (see Protocols/README.md)."
        case .unknownVersion(_, let supported):
            "Upgrade this receiver, or have the sender write version \(supported) or lower."
        case .wrongKind:
            "Check that the request went to the right service or key, and that 'kind' names the payload's full protobuf type."
        case .malformedPayload:
            "Serialize the payload with the message type that 'kind' names, from the .proto files in Protocols/."
        case .unencodable:
            "Make the message smaller; Flowbus messages are limited to 1 MiB by default."
        }
    }

    public var description: String { "\(message) \(hint)" }
}
