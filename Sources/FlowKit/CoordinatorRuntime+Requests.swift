import Clone
import FlowProtocol
import Foundation
import Logging
import Majordomo
import MessagePath
import SwiftProtobuf
import ZeroMQ

/// Requests: the CoordinatorCalls and Intents a coordinator answers, each retry (same session
/// and idempotency key) with the first try's outcome.
extension CoordinatorRuntime {
    /// Answers one request envelope (a CoordinatorCall or an Intent). `peer`: who sent it, as a
    /// closed broker names it (`MajordomoRequest.peer`).
    public func respond(to envelope: Envelope, peer: String? = nil) -> Envelope {
        if envelope.holds(Flowbus_V1_CoordinatorCall.self), let call = try? envelope.unwrap(Flowbus_V1_CoordinatorCall.self) {
            return EnvelopeService.envelope(
                handleCall(call, envelope: envelope, peer: peer), answering: envelope, writer: writer, incarnation: incarnation)
        }
        if envelope.holds(Flowbus_V1_Intent.self), let intent = try? envelope.unwrap(Flowbus_V1_Intent.self) {
            return EnvelopeService.envelope(
                handleIntent(intent, envelope: envelope), answering: envelope, writer: writer, incarnation: incarnation)
        }
        state.withLock { $0.malformed += 1 }
        return EnvelopeService.wrongKind(
            envelope, expected: [Flowbus_V1_CoordinatorCall.protoMessageName, Flowbus_V1_Intent.protoMessageName], writer: writer)
    }

    func handleCall(_ call: Flowbus_V1_CoordinatorCall, envelope: Envelope, peer: String?) -> Flowbus_V1_CoordinatorReply {
        let named = envelope.session.isEmpty ? (call.args["session"] ?? "") : envelope.session
        if isOwner, call.method == "openSession" {
            let requested = call.args["session"] ?? named
            // A new session is anyone's to open; an existing id is its holders' to attach to.
            if !requested.isEmpty, let session = try? SessionID(requested),
               let refused = guardRequest(envelope, needs: .drive, session: session, doing: "openSession (attach)") {
                return Self.refusal(refused)
            }
            return openSession(requested: requested, create: call.args["create"] == "true", peer: peer)
        }
        guard let session = try? SessionID(named) else {
            return Self.refusal(WireError(.invalidField, "the call \(call.method) names no valid session (\"\(named)\")",
                                          hint: "set Envelope.session to the session id"))
        }
        // A client may touch and close its session; every other call is the coordinators' own.
        let needed: SessionRight = isOwner && (call.method == "closeSession" || call.method == "touch") ? .drive : .plugin
        if let refused = guardRequest(envelope, needs: needed, session: session, doing: "the call \(call.method)") {
            return Self.refusal(refused)
        }
        if let fenced = checkFence(envelope) { return fenced }
        state.withLock { touch(session, in: &$0) }
        let remembered = Self.rememberedKey(session, envelope.idempotencyKey)
        let recorded = Self.isRecordedCall(call.method)
        if let earlier = state.withLock({ state -> Flowbus_V1_CoordinatorReply? in
            // Answered before by this process, or applied by an instance whose record says so
            // (its previous incarnation's too): a retry or a duplicate gets the same answer.
            guard let reply = state.recentCalls[remembered, as: Flowbus_V1_CoordinatorReply.self]
                ?? Self.appliedCall(envelope.idempotencyKey, in: state.appliedCalls[session]) else { return nil }
            state.retriesAnswered += 1
            return reply
        }) {
            if recorded, earlier.ok { recordApplied(earlier, key: envelope.idempotencyKey, session: session) }
            return earlier
        }
        let reply = handleCallOnce(call, session: session, key: envelope.idempotencyKey)
        if reply.ok || Self.isFinal(reply.error) { state.withLock { $0.recentCalls.remember(reply, for: remembered) } }
        if recorded, reply.ok { recordApplied(reply, key: envelope.idempotencyKey, session: session) }
        return reply
    }

    /// The calls an instance's record remembers once applied: the coordinator's own methods
    /// (`Coordinator.handle(call:args:)`). The runtime's own are answered again by what they
    /// leave: `navigate` by the navigation's keys, `start` and `finish` by the instance there is
    /// or is not, a session's opening and closing by its record.
    static func isRecordedCall(_ method: String) -> Bool {
        !["start", "finish", "navigate", "openSession", "closeSession", "touch"].contains(method)
    }

    /// Adds an applied call to its instance's record once everything it wrote is confirmed, so a
    /// retry or a duplicate of it that reaches this coordinator's next incarnation is answered
    /// as it was, not applied again. Not before: an incarnation killed while its writes were
    /// unconfirmed never answered the call, and its next one must apply it again (its session
    /// record, say, may never have reached the map). Writes not confirmed in time leave it out;
    /// the caller, told to ask again (`AnswerSettling`), comes back, and it is added then. The
    /// answer waits for this record too.
    func recordApplied(_ reply: Flowbus_V1_CoordinatorReply, key: String, session: SessionID) {
        guard !key.isEmpty,
              state.withLock({ Self.appliedCall(key, in: $0.appliedCalls[session]) == nil && $0.instances[session] != nil }),
              map.settle(timeout: AnswerSettling.timeout) else { return }
        state.withLock { state in
            guard let instance = state.instances[session], Self.appliedCall(key, in: state.appliedCalls[session]) == nil else { return }
            var applied = Flowbus_V1_AppliedCall()
            applied.key = key
            applied.reply = reply
            var calls = state.appliedCalls[session] ?? []
            calls.append(applied)
            if calls.count > Self.rememberedCalls { calls.removeFirst(calls.count - Self.rememberedCalls) }
            state.appliedCalls[session] = calls
            record(instance, of: session, in: state)
        }
    }

    /// The answer an instance gave the call with `key`, if its last applied calls hold it.
    static func appliedCall(_ key: String, in applied: [Flowbus_V1_AppliedCall]?) -> Flowbus_V1_CoordinatorReply? {
        guard !key.isEmpty, let applied else { return nil }
        return applied.last { $0.key == key }?.reply
    }

    /// The session and key under which an answer is remembered; empty (not remembered) without a key.
    static func rememberedKey(_ session: SessionID, _ key: String) -> String {
        key.isEmpty ? "" : "\(session.text)\u{0}\(key)"
    }

    /// Whether a refusal would be the same on a retry: not when a peer did not answer or the
    /// runtime failed (a retry may succeed), nor a capability refusal (that was not this caller's answer).
    static func isFinal(_ error: WireError) -> Bool {
        switch error.code {
        case .unavailable, .internal, .forbidden: false
        default: true
        }
    }

    func handleCallOnce(_ call: Flowbus_V1_CoordinatorCall, session: SessionID, key: String) -> Flowbus_V1_CoordinatorReply {
        switch call.method {
        case "start": return start(session: session, parent: call.args["parent"] ?? "", args: call.args)
        case "finish": return finish(session: session)
        case "navigate" where isOwner: return navigate(session: session, ops: call.ops, expected: call.expectedNavVersion, key: key)
        case "closeSession" where isOwner: return closeSession(session, reason: "closed by a client")
        case "touch" where isOwner:
            // Activity, noted above, for a session that is open.
            let open = state.withLock { $0.instances[session] != nil }
            return open ? Self.accepted() : Self.refusal(noInstance(session, doing: "touch"))
        default:
            return state.withLock { state -> Flowbus_V1_CoordinatorReply in
                guard let instance = state.instances[session] else {
                    return Self.refusal(noInstance(session, doing: call.method))
                }
                do {
                    let result = try instance.handle(call: call.method, args: call.args)
                    apply(instance, of: session, in: &state, syncNavigation: nil)
                    var reply = Flowbus_V1_CoordinatorReply()
                    reply.ok = true
                    reply.result = result
                    reply.navVersion = state.navigations.version(of: session) ?? 0
                    return reply
                } catch {
                    return Self.refusal(Self.wireError(error))
                }
            }
        }
    }

    func handleIntent(_ intent: Flowbus_V1_Intent, envelope: Envelope) -> Flowbus_V1_IntentReply {
        guard let session = try? SessionID(envelope.session) else {
            return Self.intentRefusal(WireError(.invalidField, "the intent names no valid session (\"\(envelope.session)\")",
                                                hint: "set Envelope.session to the session id `flowbus sessions` lists"))
        }
        if let refused = guardRequest(envelope, needs: .drive, session: session, doing: "the intent \"\(intent.action)\"") {
            return Self.intentRefusal(refused)
        }
        state.withLock { touch(session, in: &$0) }
        let key = envelope.idempotencyKey
        let remembered = Self.rememberedKey(session, key)
        if let earlier = state.withLock({ state in
            state.recentIntents[remembered, as: Flowbus_V1_IntentReply.self].map { reply in state.retriesAnswered += 1; return reply }
        }) {
            return earlier
        }
        let reply = handleIntentOnce(intent, session: session, key: key)
        if reply.applied || Self.isFinal(reply.error) { state.withLock { $0.recentIntents.remember(reply, for: remembered) } }
        return reply
    }

    func handleIntentOnce(_ intent: Flowbus_V1_Intent, session: SessionID, key: String) -> Flowbus_V1_IntentReply {
        if isOwner, SessionActions.names.contains(intent.action) {
            return ownerIntent(intent, session: session, key: key)
        }
        let input = IntentInput(
            action: intent.action, fields: intent.fields, params: intent.params, session: session.text, screenID: intent.screenID, screen: intent.screen)
        // Its navigation is recorded under a key made from the intent's, by the owner itself or
        // (a non-owner's) by the owner it is sent to.
        let navigationKey = key.isEmpty ? "" : "\(key)/navigate"
        var pendingNavigation: [NavigationOp]?
        var startsChildren = false
        var earlier: Flowbus_V1_IntentReply?
        let refusal: WireError? = state.withLock { state in
            guard let instance = state.instances[session] else { return noInstance(session, doing: intent.action) }
            if isOwner, let answer = ownIntentAnsweredBefore(intent, session: session, navigationKey: navigationKey, in: &state) {
                earlier = answer
                return nil
            }
            let (context, children) = (instance.context, instance.children)
            do {
                try instance.handle(intent: input)
            } catch {
                return Self.wireError(error)
            }
            startsChildren = instance.effects.contains { if case .startChild = $0 { true } else { false } }
            // An intent that only navigates leaves the instance's record as it was (its navigation
            // is the owner's, sent and waited for here, or applied by the owner itself): it is not
            // written again. A select on a list wrote its coordinator's record, the same, each time.
            let persist = changesRecord(instance, context: context, children: children, countingNavigation: false)
            pendingNavigation = apply(
                instance, of: session, in: &state, syncNavigation: isOwner ? nil : [], persist: persist, navigationKey: navigationKey)
            return nil
        }
        if let refusal { return Self.intentRefusal(refusal) }
        if let earlier { return earlier }
        var reply = Flowbus_V1_IntentReply()
        reply.applied = true
        if let ops = pendingNavigation, !ops.isEmpty, !isOwner {
            // A child flow started by this intent is live before its screen shows (its start
            // went out through the caller, which answers in order).
            if startsChildren, !calls.waitUntilIdle(lane: session.text, timeout: .seconds(3)) {
                logger.warning("a child flow did not answer its start within 3 s; showing its screen anyway",
                               metadata: ["flowbus.session": "\(session)", "flowbus.action": "\(intent.action)"])
            }
            // The person's action waits for the owner's verdict: two clients acting at once on
            // one screen get one applied and one refused, never both.
            // Its key comes from the intent's, so a retry of the intent (even to a restarted
            // incarnation of this coordinator) is recognised by the owner as the same change.
            let answer = callSync(
                coordinator: "app", method: "navigate", session: session, ops: ops, expected: intent.screenVersion, key: navigationKey)
            reply.applied = answer.ok
            reply.screenVersion = answer.navVersion
            if !answer.ok { reply.error = answer.error }
        } else if isOwner {
            reply.screenVersion = state.withLock { $0.navigations.version(of: session) ?? 0 }
        }
        return reply
    }

    /// The owner's answer to a person's intent on one of its own screens before the intent runs:
    /// - a retry of one whose navigation was applied (its key in the navigation's, even one an
    ///   earlier incarnation wrote) is answered with the version it made, not applied again;
    /// - one made on another navigation version than the session's is refused as stale, as a
    ///   non-owner's navigation is by the owner: of two clients acting at once, one wins.
    /// Nil: it runs.
    func ownIntentAnsweredBefore(
        _ intent: Flowbus_V1_Intent, session: SessionID, navigationKey: String, in state: inout State
    ) -> Flowbus_V1_IntentReply? {
        guard let known = state.navigations[session] else { return nil }
        let navigation = takingUpAhead(known, expected: intent.screenVersion, session: session, in: &state)
        var reply = Flowbus_V1_IntentReply()
        if let version = Self.appliedVersion(of: navigationKey, in: navigation) {
            state.retriesAnswered += 1
            reply.applied = true
            reply.screenVersion = version
            return reply
        }
        guard intent.screenVersion != 0, intent.screenVersion != navigation.version else { return nil }
        reply.applied = false
        reply.screenVersion = navigation.version
        reply.error = Self.staleNavigation(made: intent.screenVersion, now: navigation.version)
        return reply
    }

    func noInstance(_ session: SessionID, doing what: String) -> WireError {
        WireError(.invalidField, "no \(name) flow is live in session \(session), so \"\(what)\" has nothing to act on",
                  hint: "the flow has ended; look at the session's current screen (`flowbus sessions`)")
    }
}
