import FlowProtocol
import Logging
import Foundation
import Synchronization

/// Where an action on a screen goes, as the screen published it (Action.service and handler):
/// the screen's view model (data) or a coordinator (navigation).
public enum ActionRoute: Sendable, Equatable, CustomStringConvertible {
    /// A data action: an Intent to `vm.<kind>`, made on the ViewState.screen_version the client saw.
    case viewModel(kind: String)
    /// A navigation action: an Intent to `coord.<name>`, made on the Navigation.version the client saw.
    case coordinator(name: String)

    /// The route of a published action; nil when its service is neither `vm.*` nor `coord.*`.
    public init?(_ action: Flowbus_V1_Action) {
        let service = action.service
        if service.hasPrefix("vm."), action.handler == .viewModel {
            self = .viewModel(kind: String(service.dropFirst(3)))
        } else if service.hasPrefix("coord.") {
            self = .coordinator(name: String(service.dropFirst(6)))
        } else {
            return nil
        }
    }

    /// The MDP service the intent is sent to.
    public var service: String {
        switch self {
        case .viewModel(let kind): "vm.\(kind)"
        case .coordinator(let name): "coord.\(name)"
        }
    }

    public var isNavigation: Bool {
        if case .coordinator = self { return true }
        return false
    }

    public var description: String { service }
}

/// An intent ready to send: built once, so a retry carries the same idempotency key.
public struct PreparedIntent: Sendable, Equatable {
    public var route: ActionRoute
    public var intent: Flowbus_V1_Intent
    public var idempotencyKey: String
    public var action: String { intent.action }
    /// The version the intent was made on (ViewState.screen_version or Navigation.version).
    public var version: UInt64 { intent.screenVersion }
}

/// What came back for an intent: applied, or refused with the reason.
public struct IntentOutcome: Sendable, Equatable, CustomStringConvertible {
    public var prepared: PreparedIntent
    public var reply: Flowbus_V1_IntentReply

    public var applied: Bool { reply.applied }
    /// The refusal (STALE_INTENT, INVALID_FIELD, UNKNOWN_SERVICE, FENCED…) when not applied.
    public var error: WireError? { reply.applied ? nil : reply.error }
    public var isStale: Bool { error?.code == .staleIntent }

    public var description: String {
        let head = "\(prepared.action) → \(prepared.route.service) on v\(prepared.version)"
        guard let error else { return head + ": applied (now v\(reply.screenVersion))" }
        return head + ": refused, \(error.code): \(error.message)" + (error.hint.isEmpty ? "" : " (\(error.hint))")
    }
}

extension SessionClient {
    /// Builds the intent for `action` on the top screen, routed as the screen offers it
    /// (`SessionView.offeredActions`): a view model's action made on the ViewState.screen_version
    /// seen, a coordinator's on the Navigation.version seen. `route` overrides what is offered.
    public func prepare(action: String, fields: [String: String] = [:], route: ActionRoute? = nil) throws(SessionClientError) -> PreparedIntent {
        try Self.prepare(action: action, fields: fields, route: route, in: view, key: nextIdempotencyKey())
    }

    static func prepare(action: String, fields: [String: String], route: ActionRoute?, in view: SessionView, key: String) throws(SessionClientError) -> PreparedIntent {
        guard let screen = view.topScreen else { throw .noScreen(session: view.session) }
        let chosen: ActionRoute
        if let route {
            chosen = route
        } else if let offered = view.action(named: action), let published = ActionRoute(offered) {
            chosen = published
        } else {
            throw .unknownAction(action: action, screen: screen.kind, known: view.offeredActions.map(\.name))
        }
        var intent = Flowbus_V1_Intent()
        intent.screen = screen.kind
        intent.action = action
        intent.fields = fields
        intent.screenID = screen.id
        intent.params = screen.params
        switch chosen {
        case .coordinator: intent.screenVersion = view.navigationVersion
        case .viewModel(let kind): intent.screenVersion = view.states[kind]?.screenVersion ?? 0
        }
        return PreparedIntent(route: chosen, intent: intent, idempotencyKey: key)
    }

    /// Like `prepare`, but when the top screen does not offer `action` yet (its view model's
    /// first state is still on its way), waits up to `wait` for it.
    public func prepareWhenOffered(action: String, fields: [String: String] = [:], wait: Duration = .seconds(2)) async throws(SessionClientError) -> PreparedIntent {
        try await preparePressed(action: action, fields: fields, wait: wait).0
    }

    /// Sends a prepared intent (again, for a retry: same key, applied at most once) and returns
    /// the reply. A refusal is an outcome, not an error; a bus that does not answer throws.
    public func send(_ prepared: PreparedIntent) async throws(SessionClientError) -> IntentOutcome {
        let envelope = try BusConnection.envelope(
            prepared.intent, session: session, key: prepared.idempotencyKey, writer: options.name, capability: capability)
        store.note(.intent(action: prepared.action, service: prepared.route.service, version: prepared.version,
                           idempotencyKey: prepared.idempotencyKey), writer: options.name)
        let reply: Envelope
        do {
            reply = try await requester.request(service: prepared.route.service, envelope: envelope)
        } catch {
            store.note(.reply(action: prepared.action, service: prepared.route.service, applied: false, error: SessionEventText.unanswered + "\(error)",
                              idempotencyKey: prepared.idempotencyKey), writer: options.name)
            throw error
        }
        var answer: Flowbus_V1_IntentReply
        if let error = reply.carriedError {
            answer = Flowbus_V1_IntentReply()
            answer.error = error
        } else {
            do {
                answer = try reply.unwrap(Flowbus_V1_IntentReply.self)
            } catch {
                throw .unexpectedReply(service: prepared.route.service, kind: reply.kind)
            }
        }
        let outcome = IntentOutcome(prepared: prepared, reply: answer)
        store.note(.reply(action: prepared.action, service: prepared.route.service, applied: outcome.applied,
                          error: outcome.error.map { "\($0.code) \($0.message)" } ?? "", idempotencyKey: prepared.idempotencyKey),
                   writer: options.name)
        return outcome
    }

    /// `action` as a person pressed it on the screen this client shows. Refused as stale only
    /// because the screen's state was published again since, showing the same (a tab shown again
    /// publishes its state anew), it is sent once more on the new version: the press meant the
    /// same thing there. When what the screen shows changed (another client acted, a load
    /// finished), the refusal stands, for the person to look again.
    public func sendPressed(action: String, fields: [String: String] = [:]) async throws(SessionClientError) -> IntentOutcome {
        // The intent and the state it is compared with later come from one look at the screen: a
        // state arriving in between (a tab shown again starts loading) would be compared instead
        // of the one pressed on, and the press refused for good.
        let (prepared, seen) = try await preparePressed(action: action, fields: fields)
        let outcome = try await send(prepared)
        guard outcome.isStale, let seen, outcome.reply.screenVersion > prepared.version else { return outcome }
        let current = outcome.reply.screenVersion
        // A screen shown again may load again: compare what it settles on.
        guard let now = try? await waitUntil(timeout: .seconds(3), "\(seen.kind) settled at version \(current) or later", { view in
            guard let state = view.states[seen.kind] else { return false }
            return state.screenVersion >= current && state.phase != .loading
        }).states[seen.kind], Self.showsTheSame(seen, now) else { return outcome }
        logger.debug("the screen was published again unchanged; sending the press again on its new version", metadata: [
            "flowbus.action": "\(action)", "flowbus.version": "\(now.screenVersion)",
        ])
        return try await send(prepare(action: action, fields: fields, route: prepared.route))
    }

    /// `prepareWhenOffered`, with the view model's state the intent was made on (nil for a
    /// coordinator's action), both from the same view.
    ///
    /// An action not offered yet is looked for again in each view the client applies from then
    /// on, as it applies it, never on a timer: a screen's actions often come a moment after the
    /// screen (the view model's state follows the navigation), and a press made in between goes
    /// out as soon as they do.
    func preparePressed(action: String, fields: [String: String], wait: Duration = .seconds(2)) async throws(SessionClientError) -> (PreparedIntent, ScreenState?) {
        let deadline = ContinuousClock.now + wait
        while true {
            let view = view
            offerLooks.add(1, ordering: .relaxed)
            do {
                let prepared = try Self.prepare(action: action, fields: fields, route: nil, in: view, key: nextIdempotencyKey())
                let seen: ScreenState? = if case .viewModel(let kind) = prepared.route { view.states[kind] } else { nil }
                return (prepared, seen)
            } catch {
                guard case .unknownAction = error else { throw error }
                let left = deadline - ContinuousClock.now
                guard left > .zero else { throw error }
                // Until a view offers it, or has something else to say about it (no screen, a
                // field missing): that view is prepared from above, as this one was.
                do {
                    try await waitUntil(timeout: left, "\(action) offered") { view in
                        self.offerLooks.add(1, ordering: .relaxed)
                        do throws(SessionClientError) {
                            _ = try Self.prepare(action: action, fields: fields, route: nil, in: view, key: "")
                            return true
                        } catch {
                            if case .unknownAction = error { return false }
                            return true
                        }
                    }
                } catch {
                    // The time ran out: the next look says what the screen offers instead.
                }
            }
        }
    }

    /// Whether two states of a screen show a person the same: equal but for their version and
    /// the key of the `appear` they followed (bookkeeping for the navigation owner, not shown).
    /// A load in progress keeps drawing the data it had (its state carries them), so a loading
    /// state and a success with the same data, presentation and actions show the same: a press
    /// made while a tab shown again reloads means what it means once the load is done.
    static func showsTheSame(_ one: ScreenState, _ other: ScreenState) -> Bool {
        var one = one.state, other = other.state
        one.screenVersion = 0
        other.screenVersion = 0
        one.appearKey = ""
        other.appearKey = ""
        one.appearVersion = 0
        other.appearVersion = 0
        if Set([one.phase, other.phase]) == [.loading, .success] {
            one.phase = .success
            other.phase = .success
        }
        return one == other
    }

    /// `prepare` then `send`: the action on the top screen, routed as the screen offers it
    /// (waiting briefly for the offer when the screen's state has not arrived yet).
    @discardableResult
    public func send(action: String, fields: [String: String] = [:], route: ActionRoute? = nil) async throws(SessionClientError) -> IntentOutcome {
        if let route { return try await send(prepare(action: action, fields: fields, route: route)) }
        return try await send(prepareWhenOffered(action: action, fields: fields))
    }
}
