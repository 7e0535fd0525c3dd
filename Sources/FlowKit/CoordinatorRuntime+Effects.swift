import Clone
import FlowProtocol
import Foundation
import Logging
import Majordomo
import MessagePath
import SwiftProtobuf
import ZeroMQ

/// Effects: what a coordinator instance asked for, carried out (navigation, child flows, calls
/// to other coordinators), and the replies it builds.
extension CoordinatorRuntime {
    /// Carries out the effects the instance recorded. Navigation is applied here when this
    /// process owns it; otherwise it is sent to the owner, or returned (when `syncNavigation`
    /// is non-nil) for the caller to send and wait for.
    @discardableResult
    func apply(_ instance: Coordinator, of session: SessionID, in state: inout State, syncNavigation: [NavigationOp]?, persist: Bool = true) -> [NavigationOp]? {
        var collected = syncNavigation
        let effects = instance.effects
        instance.effects = []
        for effect in effects {
            switch effect {
            case .navigate(let declared):
                let ops = declared.map(offeringActions)
                if isOwner {
                    _ = applyNavigation(session: session, ops: ops, expected: 0, in: &state)
                } else if collected != nil {
                    collected?.append(contentsOf: ops)
                } else {
                    send(coordinator: "app", method: "navigate", session: session, ops: ops)
                }
            case .startChild(let child, let args):
                var callArgs = args
                callArgs["parent"] = name
                send(coordinator: child, method: "start", session: session, args: callArgs)
            case .finishChild(let child):
                send(coordinator: child, method: "finish", session: session)
            case .call(let coordinator, let method, let args):
                send(coordinator: coordinator, method: method, session: session, args: args)
            }
        }
        if persist, state.instances[session] === instance { record(instance, of: session, in: state) }
        if isOwner, instance.parent.isEmpty { writeSessionRecord(instance, of: session, in: &state) }
        return collected
    }

    func send(coordinator: String, method: String, session: SessionID, args: [String: String] = [:], ops: [NavigationOp] = []) {
        guard let body = callBody(method: method, session: session, args: args, ops: ops, expected: 0) else { return }
        let logger = logger
        calls.post(service: "coord.\(coordinator)", body: body, lane: session.text, tries: ServiceCallPolicy.postTries) { outcome in
            guard case .success(let bytes) = outcome else { return }
            if let reply = Self.decodeReply(bytes), !reply.ok {
                logger.warning("call refused", metadata: [
                    "flowbus.target": "coord.\(coordinator)", "flowbus.method": "\(method)", "flowbus.session": "\(session)",
                    "flowbus.error": "\(reply.error.message)",
                ])
            }
        }
    }

    func callSync(coordinator: String, method: String, session: SessionID, ops: [NavigationOp], expected: UInt64, key: String = "") -> Flowbus_V1_CoordinatorReply {
        guard let body = callBody(method: method, session: session, args: [:], ops: ops, expected: expected, key: key) else {
            return Self.refusal(WireError(.internal, "the navigation call could not be encoded", hint: "report this as a bug"))
        }
        do {
            let bytes = try calls.request(service: "coord.\(coordinator)", body: body)
            return Self.decodeReply(bytes)
                ?? Self.refusal(WireError(.internal, "coord.\(coordinator) answered with something other than a CoordinatorReply", hint: "check its logs"))
        } catch {
            return Self.refusal(WireError(.unavailable, "coord.\(coordinator) did not answer: \(error.reason)", hint: "check `flowbus ps`; retry the action"))
        }
    }

    /// A call's envelope; without `key`, a fresh idempotency key (the caller's retries resend these bytes, so keep it).
    func callBody(method: String, session: SessionID, args: [String: String], ops: [NavigationOp], expected: UInt64, key: String = "") -> [UInt8]? {
        var call = Flowbus_V1_CoordinatorCall()
        call.method = method
        call.args = args
        call.ops = ops
        call.expectedNavVersion = expected
        return try? Envelope.wrapping(
            call, session: session.text, idempotencyKey: key.isEmpty ? "\(writer)/\(incarnation)/\(UUID().uuidString)" : key,
            writer: writer, incarnation: incarnation
        ).signed(by: capabilities).encoded()
    }

    static func decodeReply(_ bytes: [UInt8]) -> Flowbus_V1_CoordinatorReply? {
        guard let envelope = try? Envelope.decodeChecked(bytes) else { return nil }
        if let reply = try? envelope.unwrap(Flowbus_V1_CoordinatorReply.self) { return reply }
        if let error = try? envelope.unwrap(WireError.self) { return refusal(error) }
        return nil
    }

    static func wireError(_ error: any Error) -> WireError {
        if let refusal = error as? IntentRefusal { return WireError(refusal.code, refusal.message, hint: refusal.hint) }
        return WireError(.internal, "\(error)", hint: "report this as a bug")
    }

    static func accepted() -> Flowbus_V1_CoordinatorReply {
        var reply = Flowbus_V1_CoordinatorReply()
        reply.ok = true
        return reply
    }

    static func refusal(_ error: WireError) -> Flowbus_V1_CoordinatorReply {
        var reply = Flowbus_V1_CoordinatorReply()
        reply.ok = false
        reply.error = error
        return reply
    }

    static func intentRefusal(_ error: WireError) -> Flowbus_V1_IntentReply {
        var reply = Flowbus_V1_IntentReply()
        reply.applied = false
        reply.error = error
        return reply
    }
}
