import FlowProtocol
import Foundation
import Logging
import MessagePath
import Synchronization

/// The navigation owner's lifecycle calls as a view-model runtime takes them: an `appear`'s key
/// recorded with the state, a session's `close` and what arrives for it after, and requests of a
/// replaced incarnation fenced off.
extension ViewModelRuntime {
    /// An `appear` that published nothing (its state was on the bus already) still leaves its key
    /// there: the state is written again, at the same version, carrying it (`appear_key`), so a
    /// restarted navigation owner sees that this `appear` arrived and does not send it again.
    func recordAppear(_ key: String, session: SessionID) {
        guard let stored = stored(session: session), stored.state.screenID == currentScreenID,
              stored.state.appearKey != key || stored.state.appearVersion != stored.state.screenVersion else { return }
        var value = stored.state
        value.appearKey = key
        value.appearVersion = value.screenVersion
        do {
            let bytes = try Envelope.wrapping(
                value, session: session.text, idempotencyKey: key, writer: writer, incarnation: incarnation, keyVersion: value.screenVersion
            ).encoded()
            try map.set(CloneKey.viewModelKeys(session: session, screen: screenName), value: bytes)
        } catch {
            logger.error("an appear was not recorded with the state", metadata: ["flowbus.session": "\(session)", "flowbus.error": "\(error)"])
        }
    }

    /// The session was closed (the navigation owner says so): its state leaves the map, both
    /// copies, and this process forgets it, but for which opening of it was closed
    /// (`answerForClosed`). Repeating it changes nothing.
    func close(_ session: SessionID, opening: Int64, answering envelope: Envelope) -> Envelope {
        closed.withLock { $0.remember(ClosedSession(opening: opening), for: session) }
        instances[session] = nil
        for key in CloneKey.viewModelKeys(session: session, screen: screenName) {
            do {
                try map.delete(key)
            } catch {
                logger.error("a closed session's state was not deleted", metadata: ["flowbus.key": "\(key)", "flowbus.error": "\(error)"])
            }
        }
        servedCount.add(1, ordering: .relaxed)
        return reply(to: envelope, applied: true, version: 0, error: nil)
    }

    /// The answer to a request for a session this process closed, or nil when it is to run:
    /// - an `appear` or `reset` of the opening that was closed (a try held up on the way, or sent
    ///   again, while the close went ahead) is answered as done and makes no state again;
    /// - one of a newer opening of the same session id opens it again here;
    /// - a person's intent, until then, is refused: the session is closed.
    func answerForClosed(_ intent: Flowbus_V1_Intent, session: SessionID, envelope: Envelope) -> Envelope? {
        enum Verdict { case run, late, closed }
        let lifecycle = Self.lifecycleActions.contains(intent.action)
        let verdict = closed.withLock { closed -> Verdict in
            guard var entry = closed[session], !entry.reopened else { return .run }
            guard lifecycle else { return .closed }
            let opening = intent.sessionOpenedAtUnixNanos
            if opening != 0, opening <= entry.opening { return .late }
            entry.reopened = true
            closed.remember(entry, for: session)
            return .run
        }
        switch verdict {
        case .run:
            return nil
        case .late:
            lateAfterCloseCount.add(1, ordering: .relaxed)
            logger.info("a lifecycle call of a session this process closed arrived late; taken as done", metadata: [
                "flowbus.session": "\(session)", "flowbus.action": "\(intent.action)", "flowbus.key": "\(envelope.idempotencyKey)",
            ])
            return reply(to: envelope, applied: true, version: 0, error: nil)
        case .closed:
            refusedCount.add(1, ordering: .relaxed)
            return reply(to: envelope, applied: false, version: 0, error: WireError(
                .invalidField, "session \(session) was closed, so its \(screen) screen takes no more actions; \"\(intent.action)\" was not applied",
                hint: "open a session (or attach to an open one with `flowbus client --session ID`) and act on its screens"))
        }
    }

    /// A refusal for a request from an incarnation older than one already heard from its process
    /// (the navigation owner's `appear`, `reset`, `close` sent before a restart and delivered
    /// after); nil when it may be applied. Clients send no incarnation.
    func fence(_ envelope: Envelope) -> Envelope? {
        guard envelope.incarnation > 0, !envelope.writer.isEmpty else { return nil }
        let newest = fences.withLock { fences in
            let newest = fences[envelope.writer] ?? 0
            if envelope.incarnation >= newest { fences[envelope.writer] = envelope.incarnation }
            return newest
        }
        guard envelope.incarnation < newest else { return nil }
        refusedCount.add(1, ordering: .relaxed)
        logger.warning("fenced a request from an older incarnation", metadata: [
            "flowbus.writer": "\(envelope.writer)", "flowbus.incarnation": "\(envelope.incarnation)", "flowbus.newest": "\(newest)",
        ])
        return reply(to: envelope, applied: false, version: 0, error: WireError(
            .fenced, "\(envelope.writer) incarnation \(envelope.incarnation) was replaced by incarnation \(newest); its request is ignored",
            hint: "a restarted plugin carries on; this process should stop"))
    }
}

/// A session a view model closed: which opening of it (`SessionRecord.opened_at_unix_nanos`, 0
/// when the owner did not say), and whether an `appear` of a newer opening came since.
struct ClosedSession {
    var opening: Int64
    var reopened = false
}
