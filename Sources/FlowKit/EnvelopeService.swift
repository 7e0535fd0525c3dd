import FlowProtocol
import Majordomo
import SwiftProtobuf
import ZeroMQ

/// The request → reply frame of every FlowKit service: exactly one Envelope in, one out;
/// anything else is answered with an Error envelope (MALFORMED, UNKNOWN_VERSION) and counted
/// by the caller, never a crash.
enum EnvelopeService {
    static func reply(to body: [Frame], writer: String, handle: (Envelope) -> Envelope) -> (frames: [Frame], malformed: Bool) {
        replyBytes(to: body, writer: writer) { (try? handle($0).encoded()) ?? [] }
    }

    /// The same, for a handler that answers with an encoded envelope (a reply kept from before).
    static func replyBytes(to body: [Frame], writer: String, handle: (Envelope) -> [UInt8]) -> (frames: [Frame], malformed: Bool) {
        switch request(in: body, writer: writer) {
        case .envelope(let envelope): ([handle(envelope)], false)
        case .malformed(let answer): (answer, true)
        }
    }

    /// What a request's body holds: one valid Envelope, or the error reply for what it is not.
    enum Request {
        case envelope(Envelope)
        case malformed(answer: [Frame])
    }

    static func request(in body: [Frame], writer: String) -> Request {
        guard body.count == 1, let frame = body.first else {
            let error = ErrorReply.envelope(
                .malformed, message: "the request had \(body.count) body frames; a Flowbus request is exactly one Envelope frame",
                hint: "send one serialized flowbus.v1.Envelope (Protocols/README.md §2)", writer: writer)
            return .malformed(answer: [(try? error.encoded()) ?? []])
        }
        do {
            return .envelope(try Envelope.decodeChecked(frame))
        } catch .damaged {
            // Always the same bytes, so the client knows to send it again at once.
            return .malformed(answer: [ErrorReply.damagedFrame])
        } catch {
            return .malformed(answer: [(try? ErrorReply.envelope(for: error, writer: writer).encoded()) ?? []])
        }
    }

    /// An envelope replying to `request` with `payload`, or an INTERNAL error if it cannot be encoded.
    static func envelope(_ payload: some SwiftProtobuf.Message, answering request: Envelope, writer: String, incarnation: UInt64 = 0) -> Envelope {
        do {
            return try Envelope.wrapping(
                payload, session: request.session, idempotencyKey: request.idempotencyKey, writer: writer, incarnation: incarnation)
        } catch {
            return ErrorReply.envelope(
                .internal, message: "the reply could not be encoded: \(error)", hint: "report this as a bug",
                session: request.session, idempotencyKey: request.idempotencyKey, writer: writer)
        }
    }

    static func wrongKind(_ request: Envelope, expected: [String], writer: String) -> Envelope {
        ErrorReply.envelope(
            .malformed, message: "this service takes \(expected.joined(separator: " or ")), not \(request.kind.isEmpty ? "an empty kind" : request.kind)",
            hint: "wrap the request in an Envelope whose kind names one of those messages", session: request.session,
            idempotencyKey: request.idempotencyKey, writer: writer)
    }
}

extension Flowbus_V1_Error {
    public init(_ code: Flowbus_V1_ErrorCode, _ message: String, hint: String) {
        self.init()
        self.code = code
        self.message = message
        self.hint = hint
    }
}
