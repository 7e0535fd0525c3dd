import FlowProtocol
import Foundation
import Majordomo
import ZeroMQ

/// Calls an app service over 7/MDP: a ServiceCall envelope out, a ServiceReply envelope back.
/// Use it from one thread.
public final class MajordomoServiceTransport: ServiceTransport {
    let client: MajordomoClient
    let writer: String
    /// Every call carries its own idempotency key, the same in each of the client's retries, so
    /// a retry after a slow first try is answered from the service's memory, not applied twice.
    /// Inside an action the key comes from the action's (`ServiceCallKeys`), so a run of the
    /// action again after a restart makes the same calls with the same keys.
    private let keyPrefix = String(UUID().uuidString.prefix(8)).lowercased()
    private var calls = 0

    public init(client: MajordomoClient, writer: String) {
        self.client = client
        self.writer = writer
    }

    public func call(service: String, _ call: Flowbus_V1_ServiceCall) throws(ServiceTransportError) -> Flowbus_V1_ServiceReply {
        let body: [UInt8]
        let key: String
        do {
            calls += 1
            key = ServiceCallKeys.next(service: service, method: call.method, args: call.args) { "\(writer)/\(keyPrefix)/\(calls)" }
            body = try Envelope.wrapping(call, idempotencyKey: key, writer: writer).encoded()
        } catch {
            throw ServiceTransportError(service: service, reason: "the call could not be encoded: \(error)")
        }
        let reply: [Frame]
        do {
            // A late answer to an earlier call (a duplicate's, a slow try's) is not this call's.
            reply = try client.request(service: service, body: [body]) { Envelope.reply($0, answers: key).answers }
        } catch {
            throw ServiceTransportError(service: service, reason: "\(error)")
        }
        guard reply.count == 1, let frame = reply.first else {
            throw ServiceTransportError(service: service, reason: "the reply had \(reply.count) body frames instead of one envelope")
        }
        do {
            let envelope = try Envelope.decodeChecked(frame)
            if envelope.holds(WireError.self) {
                let error = try envelope.unwrap(WireError.self)
                throw ServiceTransportError(service: service, reason: "\(error.message) (\(error.hint))")
            }
            return try envelope.unwrap(Flowbus_V1_ServiceReply.self)
        } catch let error as ServiceTransportError {
            throw error
        } catch {
            throw ServiceTransportError(service: service, reason: "the reply was not a ServiceReply envelope: \(error)")
        }
    }
}
