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
    public static let damagedFrame = fixedFrame(
        .damaged,
        message: "The request arrived damaged (its check is missing or disagrees with its bytes) and was not applied.",
        hint: "Send the same request again; Flowbus clients do so at once. If every try is damaged, look for a fault rule that truncates or corrupts this service (flowbus fault list), or a sender that writes no check (Protocols/README.md §5).")

    /// The answer a worker gives instead of its real one when the Clone server has not confirmed,
    /// in time, the writes that answer stands for (`AnswerSettling`): the request was applied in
    /// the worker's memory only, and a kill now would lose it. Always these bytes, so a client
    /// tells it apart by comparing them (`ClientConfiguration.retryWhenAnswered`) and sends the
    /// same request again: the worker answers it from memory once the writes are confirmed, and a
    /// restarted one applies it afresh.
    public static let unsettledFrame = fixedFrame(
        .unavailable,
        message: "The request was applied, but the clone server has not yet confirmed what it wrote, so it is not answered yet.",
        hint: "Send the same request again (same idempotency key); Flowbus clients do so, as a try. If this lasts, look at `flowbus ps` (clone write counters) and any fault rule on the clone keys (flowbus fault list).")

    /// An answer that is always the same bytes (no writer, no time), for a client to compare.
    private static func fixedFrame(_ code: ErrorCode, message: String, hint: String) -> [UInt8] {
        (try? envelope(code, message: message, hint: hint, sentAtUnixNanos: 0).encoded()) ?? []
    }
}

extension Flowbus_V1_Envelope {
    /// The `Error` this envelope carries, or nil when it holds another payload.
    public var carriedError: WireError? {
        guard holds(WireError.self) else { return nil }
        return try? WireError(serializedBytes: payload)
    }
}
