import FlowProtocol
import Foundation
import SwiftProtobuf

// Internal on purpose: the SDK may grow public helpers of its own with these names.
extension Flowbus_V1_ServiceReply {
    static func payload(_ message: some SwiftProtobuf.Message) -> Flowbus_V1_ServiceReply {
        var reply = Flowbus_V1_ServiceReply()
        do {
            reply.payload = try message.wireData()
            reply.payloadKind = type(of: message).protoMessageName
        } catch {
            reply.error = ErrorReply.error(
                .internal, message: "could not serialize the \(type(of: message).protoMessageName) result: \(error)",
                hint: "report this bug; retrying will not help")
        }
        return reply
    }

    static func result(_ values: [String: String]) -> Flowbus_V1_ServiceReply {
        var reply = Flowbus_V1_ServiceReply()
        reply.result = values
        return reply
    }

    static func refusal(_ refusal: Refusal) -> Flowbus_V1_ServiceReply {
        var reply = Flowbus_V1_ServiceReply()
        reply.refusal = refusal.rawValue
        return reply
    }

    static func invalid(_ message: String, hint: String) -> Flowbus_V1_ServiceReply {
        var reply = Flowbus_V1_ServiceReply()
        reply.error = ErrorReply.error(.invalidField, message: message, hint: hint)
        return reply
    }

    /// A method in the table that the handler's switch forgot: a bug, not the caller's mistake.
    static func unhandled(_ method: String, of service: String) -> Flowbus_V1_ServiceReply {
        var reply = Flowbus_V1_ServiceReply()
        reply.error = ErrorReply.error(
            .internal, message: "\(service) lists the method \"\(method)\" but does not handle it",
            hint: "report this bug; retrying will not help")
        return reply
    }

    /// Checks `call` against `methods` (unknown method, missing argument), then runs `body`,
    /// turning a thrown `ServiceFailure` into the reply's refusal or error.
    static func serving(
        _ call: Flowbus_V1_ServiceCall, of service: String, methods: [ServiceMethod],
        _ body: () throws(ServiceFailure) -> Flowbus_V1_ServiceReply
    ) -> Flowbus_V1_ServiceReply {
        guard let method = methods.first(where: { $0.name == call.method }) else {
            let known = methods.map(\.name).joined(separator: ", ")
            let named = call.method.isEmpty ? "no method was named" : "it has no method \"\(call.method)\""
            return .invalid("\(service) cannot answer: \(named)", hint: "call one of: \(known)")
        }
        if let missing = method.required.first(where: { call.arg($0).isEmpty }) {
            return .invalid(
                "\(service) \(method.name) needs the argument \"\(missing)\", and it is missing or empty",
                hint: "call it as: \(method.usage(service: service))")
        }
        do {
            return try body()
        } catch {
            switch error {
            case .refused(let refusal): return .refusal(refusal)
            case .unavailable(let reason):
                var reply = Flowbus_V1_ServiceReply()
                reply.error = ErrorReply.error(.unavailable, message: reason, hint: "retry in a moment")
                return reply
            }
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
