import FlowKit
import FlowProtocol
import Foundation
import SwiftProtobuf

/// One app service reached through a `ServiceTransport`: replies become results or `ServiceFailure`s.
struct ServiceChannel {
    let transport: any ServiceTransport
    let service: String

    func call(_ method: String, _ args: [String: String] = [:]) throws(ServiceFailure) -> ServiceReply {
        let reply: ServiceReply
        do {
            reply = try transport.call(service: service, ServiceCall(method: method, args: args))
        } catch {
            throw .unavailable(error.description)
        }
        if !reply.refusal.isEmpty { throw .refused(Refusal(rawValue: reply.refusal)) }
        if reply.hasError { throw .unavailable("\(service) \(method) failed: \(reply.error.message) (\(reply.error.hint))") }
        return reply
    }

    func call<M: SwiftProtobuf.Message>(_ method: String, _ args: [String: String], as type: M.Type) throws(ServiceFailure) -> M {
        let reply = try call(method, args)
        guard reply.payloadKind == M.protoMessageName, let message = try? M(serializedBytes: reply.payload) else {
            let got = reply.payloadKind.isEmpty ? "no payload" : reply.payloadKind
            throw .unavailable("\(service) \(method) answered with \(got) instead of \(M.protoMessageName); check that movies-services is the same version as this plugin")
        }
        return message
    }
}
