import FlowProtocol
import Foundation

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
    /// Builds the intent for `action` on the top screen: a data action for `vm.<kind>` made on the
    /// ViewState.screen_version seen, a navigation action for `coord.<owner>` (back, selectTab and
    /// ok for coord.app) made on the Navigation.version seen. `route` overrides the table.
    public func prepare(action: String, fields: [String: String] = [:], route: ActionRoute? = nil) throws(SessionClientError) -> PreparedIntent {
        let view = view
        guard let screen = view.topScreen else { throw .noScreen(session: session) }
        let chosen: ActionRoute
        if let route { chosen = route } else { chosen = try ActionTable.route(action, on: screen) }
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
        return PreparedIntent(route: chosen, intent: intent, idempotencyKey: nextIdempotencyKey())
    }

    /// Sends a prepared intent (again, for a retry: same key, applied at most once) and returns
    /// the reply. A refusal is an outcome, not an error; a bus that does not answer throws.
    public func send(_ prepared: PreparedIntent) async throws(SessionClientError) -> IntentOutcome {
        let envelope = try BusConnection.envelope(prepared.intent, session: session, key: prepared.idempotencyKey, writer: options.name)
        store.note(.intent(action: prepared.action, service: prepared.route.service, version: prepared.version,
                           idempotencyKey: prepared.idempotencyKey), writer: options.name)
        let reply: Envelope
        do {
            reply = try await requester.request(service: prepared.route.service, envelope: envelope)
        } catch {
            store.note(.reply(action: prepared.action, service: prepared.route.service, applied: false, error: "\(error)"), writer: options.name)
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
                          error: outcome.error.map { "\($0.code) \($0.message)" } ?? ""), writer: options.name)
        return outcome
    }

    /// `prepare` then `send`: the action on the top screen, as the app's action table routes it.
    @discardableResult
    public func send(action: String, fields: [String: String] = [:], route: ActionRoute? = nil) async throws(SessionClientError) -> IntentOutcome {
        try await send(prepare(action: action, fields: fields, route: route))
    }
}
