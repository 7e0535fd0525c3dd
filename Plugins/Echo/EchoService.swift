import FlowProtocol
import Majordomo
import WireCheck
import ZeroMQ

/// The `flowbus.echo` service: an Echo envelope comes back as an Echo envelope with the same
/// text; an envelope of an unknown version gets the UNKNOWN_VERSION error, one whose check
/// disagrees with its bytes (changed on the way) the DAMAGED answer; any other body is returned
/// as it came, so a client in any language can try the bus with plain frames.
struct EchoService {
    let writer: String

    func reply(to request: MajordomoRequest) -> [Frame] {
        guard request.body.count == 1, let frame = request.body.first else { return request.body }
        let envelope: Envelope
        do {
            envelope = try Envelope.decodeChecked(frame)
        } catch .damaged {
            // Without a check it may be a plain frame; with one that disagrees it was an envelope.
            if case .mismatch = WireCheck.verify(frame) { return [ErrorReply.damagedFrame] }
            return request.body
        } catch .unknownVersion(let got, let supported) {
            let failure = EnvelopeError.unknownVersion(got: got, supported: supported)
            return [(try? ErrorReply.envelope(for: failure, writer: writer).encoded()) ?? []]
        } catch {
            return request.body
        }
        guard let echo = try? envelope.unwrap(Flowbus_V1_Echo.self) else { return request.body }
        guard let reply = try? Envelope.wrapping(echo, session: envelope.session, idempotencyKey: envelope.idempotencyKey, writer: writer),
              let bytes = try? reply.encoded() else {
            return [ErrorReply.frame(.internal, message: "the echo reply could not be encoded", hint: "report this as a bug", writer: writer)]
        }
        return [bytes]
    }
}
