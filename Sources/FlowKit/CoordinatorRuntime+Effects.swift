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
    ///
    /// Calls to other coordinators go into the instance's outbox, which its record holds (and the
    /// answer waits for the record to be confirmed), and are sent after: a process killed before
    /// they are answered leaves them in the record, and its next incarnation sends them again
    /// (`resendPending`). Each leaves the outbox when answered.
    ///
    /// The owner applies its own navigation effects together, as one change, recorded under
    /// `navigationKey` (`<intent key>/navigate` for a person's intent, as a non-owner's navigate
    /// call is), so a retry of the intent is recognised by the navigation even after a restart.
    @discardableResult
    func apply(
        _ instance: Coordinator, of session: SessionID, in state: inout State, syncNavigation: [NavigationOp]?, persist: Bool = true,
        navigationKey: String = ""
    ) -> [NavigationOp]? {
        var collected = syncNavigation
        var ownOps: [NavigationOp] = []
        let effects = instance.effects
        instance.effects = []
        var outgoing: [Flowbus_V1_PendingCall] = []
        func send(_ coordinator: String, _ method: String, args: [String: String] = [:], ops: [NavigationOp] = []) {
            if let call = pendingCall(coordinator: coordinator, method: method, session: session, args: args, ops: ops) { outgoing.append(call) }
        }
        for effect in effects {
            switch effect {
            case .navigate(let declared):
                let ops = declared.map(offeringActions)
                if isOwner {
                    ownOps += ops
                } else if collected != nil {
                    collected?.append(contentsOf: ops)
                } else {
                    send("app", "navigate", ops: ops)
                }
            case .startChild(let child, let args):
                var callArgs = args
                callArgs["parent"] = name
                send(child, "start", args: callArgs)
            case .finishChild(let child):
                send(child, "finish")
            case .call(let coordinator, let method, let args):
                send(coordinator, method, args: args)
            }
        }
        if !ownOps.isEmpty { _ = applyNavigation(session: session, ops: ownOps, expected: 0, key: navigationKey, in: &state) }
        // A released instance's calls go into the outbox too (`release` records them); only a
        // replaced one's (a stale copy) are sent untracked.
        let kept = state.instances[session] === instance
        if kept, !outgoing.isEmpty { state.outbox[session, default: []] += outgoing }
        if kept, persist { record(instance, of: session, in: state) }
        if isOwner, instance.parent.isEmpty { writeSessionRecord(instance, of: session, in: &state) }
        for call in outgoing { post(call, session: session, kept: kept) }
        return collected
    }

    /// Whether what `instance` just did changes its record, from its context and children before
    /// (`context`, `children`): either changed, or it asked for an effect, whose call the outbox
    /// in the record holds. `countingNavigation` false: its navigation does not (an intent's is the
    /// owner's, applied by the owner itself or handed to it by the intent's caller).
    func changesRecord(_ instance: Coordinator, context: [String: String], children: [String], countingNavigation: Bool) -> Bool {
        instance.context != context || instance.children != children
            || instance.effects.contains { effect in
                if case .navigate = effect { return countingNavigation }
                return true
            }
    }

    func pendingCall(coordinator: String, method: String, session: SessionID, args: [String: String], ops: [NavigationOp]) -> Flowbus_V1_PendingCall? {
        let key = newCallKey()
        guard let body = callBody(method: method, session: session, args: args, ops: ops, expected: 0, key: key) else { return nil }
        var call = Flowbus_V1_PendingCall()
        call.service = "coord.\(coordinator)"
        call.body = Data(body)
        call.key = key
        return call
    }

    /// Sends `call` behind the session's earlier ones; once answered, it leaves the outbox (`kept`:
    /// it is in it), and the record is written without it when the outbox is empty.
    func post(_ call: Flowbus_V1_PendingCall, session: SessionID, kept: Bool) {
        let logger = logger
        calls.post(service: call.service, body: Array(call.body), lane: session.text, tries: ServiceCallPolicy.postTries) { [weak self] outcome in
            if case .success(let bytes) = outcome, let reply = Self.decodeReply(bytes), !reply.ok {
                logger.warning("call refused", metadata: [
                    "flowbus.target": "\(call.service)", "flowbus.key": "\(call.key)", "flowbus.session": "\(session)",
                    "flowbus.error": "\(reply.error.message)",
                ])
            }
            if kept { self?.answered(call.key, session: session) }
        }
    }

    /// A call left the outbox: answered, or given up on after every try (its failure is logged).
    func answered(_ key: String, session: SessionID) {
        state.withLock { state in
            guard var pending = state.outbox[session] else { return }
            pending.removeAll { $0.key == key }
            state.outbox[session] = pending.isEmpty ? nil : pending
            // Written when the last one is answered: an incarnation that finds a few answered
            // calls in the record sends them again, and their receivers answer from memory. A
            // released flow's record goes with its last call.
            guard pending.isEmpty else { return }
            if let instance = state.instances[session] {
                record(instance, of: session, in: state)
            } else {
                delete(.coordinatorInstance(coordinatorName, session))
            }
        }
    }

    /// After a restart: sends again, in order, the calls the previous incarnation's records left,
    /// as this incarnation's (receivers fence off an older one's) under their first keys.
    func resendPending() {
        let outboxes = state.withLock { state in
            for (session, pending) in state.outbox {
                state.outbox[session] = pending.map { call in
                    guard var envelope = try? Envelope.decodeChecked(Array(call.body)) else { return call }
                    envelope.incarnation = incarnation
                    var again = call
                    if let body = try? envelope.signed(by: capabilities).encoded() { again.body = Data(body) }
                    return again
                }
            }
            return state.outbox
        }
        for (session, pending) in outboxes {
            for call in pending { post(call, session: session, kept: true) }
        }
        let count = outboxes.values.reduce(0) { $0 + $1.count }
        if count > 0 { logger.notice("sent again the calls a previous incarnation left unanswered", metadata: ["flowbus.calls": "\(count)"]) }
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
            call, session: session.text, idempotencyKey: key.isEmpty ? newCallKey() : key,
            writer: writer, incarnation: incarnation
        ).signed(by: capabilities).encoded()
    }

    /// A fresh idempotency key for a call this incarnation makes.
    func newCallKey() -> String { "\(writer)/\(incarnation)/\(UUID().uuidString)" }

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
