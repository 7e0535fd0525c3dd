import FlowKit
import FlowProtocol
import Foundation
import SwiftProtobuf

public typealias ServiceCall = Flowbus_V1_ServiceCall
public typealias ServiceReply = Flowbus_V1_ServiceReply

extension Flowbus_V1_ServiceReply {
    static let empty = ServiceReply()

    static func payload(_ message: some SwiftProtobuf.Message) -> ServiceReply {
        var reply = ServiceReply()
        do {
            reply.payload = try message.wireData()
            reply.payloadKind = type(of: message).protoMessageName
        } catch {
            reply.error = Flowbus_V1_Error(.internal, "could not serialize the \(type(of: message).protoMessageName) result: \(error)", hint: "report this bug; retrying will not help")
        }
        return reply
    }

    static func result(_ values: [String: String]) -> ServiceReply {
        var reply = ServiceReply()
        reply.result = values
        return reply
    }

    static func unknownMethod(_ method: String, service: String, known: [String]) -> ServiceReply {
        var reply = ServiceReply()
        reply.error = Flowbus_V1_Error(
            .invalidField, "\(service) has no method \"\(method)\"", hint: "call one of: \(known.joined(separator: ", "))")
        return reply
    }

    /// Runs `body`, turning a thrown `ServiceFailure` into the reply's refusal or error.
    static func answering(_ body: () throws(ServiceFailure) -> ServiceReply) -> ServiceReply {
        do {
            return try body()
        } catch {
            var reply = ServiceReply()
            switch error {
            case .refused(let refusal): reply.refusal = refusal.rawValue
            case .unavailable(let reason): reply.error = Flowbus_V1_Error(.unavailable, reason, hint: "retry in a moment")
            }
            return reply
        }
    }
}

extension Flowbus_V1_ServiceCall {
    init(method: String, args: [String: String]) {
        self.init()
        self.method = method
        self.args = args
    }

    /// The argument, empty when absent.
    func arg(_ name: String) -> String { args[name] ?? "" }
}
