import Foundation
import SwiftProtobuf

extension Flowbus_V1_Envelope {
    /// An envelope of the current version holding `payload`, its `kind` set to the payload's full protobuf name.
    public static func wrapping(
        _ payload: some SwiftProtobuf.Message,
        session: String = "",
        idempotencyKey: String = "",
        writer: String = "",
        incarnation: UInt64 = 0,
        keyVersion: UInt64 = 0,
        sentAtUnixNanos: Int64 = WallClock.nowUnixNanos()
    ) throws(EnvelopeError) -> Envelope {
        let kind = type(of: payload).protoMessageName
        var envelope = Envelope()
        envelope.version = WireVersion.current
        envelope.kind = kind
        do {
            envelope.payload = Data(try ProtoWriter.encode(payload, capacity: 512))
        } catch {
            throw .unencodable(kind: kind, reason: "\(error)")
        }
        envelope.session = session
        envelope.idempotencyKey = idempotencyKey
        envelope.writer = writer
        envelope.incarnation = incarnation
        envelope.keyVersion = keyVersion
        envelope.sentAtUnixNanos = sentAtUnixNanos
        return envelope
    }

    /// Whether the payload is a `M`, judged by `kind`.
    public func holds<M: SwiftProtobuf.Message>(_ type: M.Type) -> Bool {
        kind == M.protoMessageName
    }

    /// The payload as a `M`; throws `.wrongKind` when `kind` names another type.
    public func unwrap<M: SwiftProtobuf.Message>(_ type: M.Type) throws(EnvelopeError) -> M {
        guard holds(type) else { throw .wrongKind(expected: M.protoMessageName, got: kind) }
        do {
            return try M(serializedBytes: payload)
        } catch {
            throw .malformedPayload(kind: kind, reason: "\(error)")
        }
    }
}
