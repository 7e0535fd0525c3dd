import Foundation
import SwiftProtobuf

/// Builds the `flowbus.v1.Error` envelopes sent where a request cannot be served.
public enum ErrorReply {
    /// The `Error` payload for `code`, with what happened and what to do.
    public static func error(_ code: ErrorCode, message: String, hint: String) -> WireError {
        var error = WireError()
        error.code = code
        error.message = message
        error.hint = hint
        return error
    }

    /// An envelope of the current version holding an `Error`.
    public static func envelope(
        _ code: ErrorCode,
        message: String,
        hint: String,
        session: String = "",
        idempotencyKey: String = "",
        writer: String = "",
        sentAtUnixNanos: Int64 = WallClock.nowUnixNanos()
    ) -> Envelope {
        var envelope = Envelope()
        envelope.version = WireVersion.current
        envelope.kind = WireError.protoMessageName
        // Serializing three scalar fields fails only past 2 GiB; an empty payload still decodes (as UNSPECIFIED).
        envelope.payload = (try? error(code, message: message, hint: hint).serializedData()) ?? Data()
        envelope.session = session
        envelope.idempotencyKey = idempotencyKey
        envelope.writer = writer
        envelope.sentAtUnixNanos = sentAtUnixNanos
        return envelope
    }

    /// The reply to a request whose body failed `Envelope.decodeChecked`.
    public static func envelope(
        for failure: EnvelopeError,
        writer: String = "",
        sentAtUnixNanos: Int64 = WallClock.nowUnixNanos()
    ) -> Envelope {
        envelope(failure.code, message: failure.message, hint: failure.hint, writer: writer, sentAtUnixNanos: sentAtUnixNanos)
    }

    /// `envelope(...)` serialized, ready to be the one body frame of an MDP REPLY.
    public static func frame(_ code: ErrorCode, message: String, hint: String, writer: String = "") -> [UInt8] {
        (try? envelope(code, message: message, hint: hint, writer: writer).encoded()) ?? []
    }

    /// The one answer to a request that arrived damaged (`EnvelopeError.damaged`): always these
    /// bytes (no writer, no time), so a client tells it from a real answer by comparing them,
    /// without decoding every reply (`ClientConfiguration.resendWhenAnswered`).
    public static let damagedFrame: [UInt8] = (try? envelope(
        .damaged,
        message: "The request arrived damaged (its check is missing or disagrees with its bytes) and was not applied.",
        hint: "Send the same request again; Flowbus clients do so at once. If every try is damaged, look for a fault rule that truncates or corrupts this service (flowbus fault list), or a sender that writes no check (Protocols/README.md §5).",
        sentAtUnixNanos: 0
    ).encoded()) ?? []
}

extension Flowbus_V1_Envelope {
    /// The `Error` this envelope carries, or nil when it holds another payload.
    public var carriedError: WireError? {
        guard holds(WireError.self) else { return nil }
        return try? WireError(serializedBytes: payload)
    }
}
