import FlowProtocol
import Majordomo
import ZeroMQ

/// Calls an app service over 7/MDP: a ServiceCall envelope out, a ServiceReply envelope back.
/// Use it from one thread.
public final class MajordomoServiceTransport: ServiceTransport {
    let client: MajordomoClient
    let writer: String

    public init(client: MajordomoClient, writer: String) {
        self.client = client
        self.writer = writer
    }

    public func call(service: String, _ call: Flowbus_V1_ServiceCall) throws(ServiceTransportError) -> Flowbus_V1_ServiceReply {
        let body: [UInt8]
        do {
            body = try Envelope.wrapping(call, writer: writer).encoded()
        } catch {
            throw ServiceTransportError(service: service, reason: "the call could not be encoded: \(error)")
        }
        let reply: [Frame]
        do {
            reply = try client.request(service: service, body: [body])
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
