import SwiftProtobuf
import WireCheck

extension Flowbus_V1_Envelope {
    /// Decodes one body frame or Clone value, applying the check and the version rule.
    ///
    /// Throws `.damaged` for bytes that do not end with their check or whose check disagrees
    /// (`WireCheck`: cut short or changed on the way), `.malformed` for bytes that are not an envelope or carry no version (0, the
    /// proto3 default, which an empty frame also decodes to), `.unknownVersion` for a version
    /// newer than `WireVersion.current`; returns the envelope otherwise. Unknown fields are
    /// kept, so a newer writer's additions within the same version pass through.
    public static func decodeChecked(_ bytes: [UInt8]) throws(EnvelopeError) -> Envelope {
        let verdict = WireCheck.verify(bytes)
        guard verdict == .intact else { throw .damaged(reason: "\(bytes.count) bytes: \(verdict)") }
        var envelope: Envelope
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
        // Checked: the field has said what it had to (an envelope sent on is sealed again).
        envelope.check = 0
        return envelope
    }

    /// The envelope's serialized bytes, ending with their check: ready for one MDP body frame
    /// or one Clone value.
    public func encoded() throws(EnvelopeError) -> [UInt8] {
        do {
            // Room for the fields besides the payload and for the check, so sealing does not grow it.
            let capacity = payload.count + 128
            var bytes: [UInt8]
            if check == 0 {
                bytes = try ProtoWriter.encode(self, capacity: capacity)
            } else {
                var unchecked = self
                unchecked.check = 0
                bytes = try ProtoWriter.encode(unchecked, capacity: capacity)
            }
            WireCheck.seal(&bytes)
            return bytes
        } catch {
            throw .unencodable(kind: Self.protoMessageName, reason: "\(error)")
        }
    }
}

extension Envelope {
    /// Whether the reply `frames` answers the request whose idempotency key is `key`. MDP has no
    /// request id: the second answer to a duplicated request, or an earlier try's answer come back
    /// late, waits on the socket and would be taken for the next request's answer. A reply that
    /// names another key answered an earlier request and is not this one's; a reply without a key,
    /// or not an envelope (the broker's refusals, `ErrorReply`'s frames), answers whatever was
    /// asked. Also returns the reply's envelope when it decoded.
    public static func reply(_ frames: [[UInt8]], answers key: String) -> (answers: Bool, envelope: Envelope?) {
        guard frames.count == 1, let envelope = try? Envelope.decodeChecked(frames[0]) else { return (true, nil) }
        return (key.isEmpty || envelope.idempotencyKey.isEmpty || envelope.idempotencyKey == key, envelope)
    }
}
