import SwiftProtobuf

extension Flowbus_V1_Envelope {
    /// Decodes one body frame or Clone value, applying the version rule.
    ///
    /// Throws `.malformed` for bytes that are not an envelope or carry no version (0, the
    /// proto3 default, which an empty frame also decodes to), `.unknownVersion` for a version
    /// newer than `WireVersion.current`; returns the envelope otherwise. Unknown fields are
    /// kept, so a newer writer's additions within the same version pass through.
    public static func decodeChecked(_ bytes: [UInt8]) throws(EnvelopeError) -> Envelope {
        let envelope: Envelope
        do {
            envelope = try Envelope(serializedBytes: bytes)
        } catch {
            throw .malformed(reason: "\(bytes.count) bytes failed to decode (\(error))")
        }
        guard envelope.version != 0 else {
            throw .malformed(reason: "the version field is missing or 0")
        }
        guard envelope.version <= WireVersion.current else {
            throw .unknownVersion(got: envelope.version, supported: WireVersion.current)
        }
        return envelope
    }

    /// The envelope's serialized bytes, ready for one MDP body frame or one Clone value.
    public func encoded() throws(EnvelopeError) -> [UInt8] {
        do {
            return try serializedBytes()
        } catch {
            throw .unencodable(kind: Self.protoMessageName, reason: "\(error)")
        }
    }
}
