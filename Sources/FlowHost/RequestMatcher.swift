import FlowProtocol
import Majordomo
import MessagePath
import ZeroMQ

/// Pairs the broker's observed replies with their requests and turns both into trace events.
/// Lives behind SessionHistory's lock, used on its decode queue.
struct RequestMatcher {
    struct Pending {
        var client: Frame
        var service: Frame
        var event: TraceEvent
        /// False while the request's session is unknown (openSession): it is recorded with its reply.
        var recorded: Bool
    }

    let limit: Int
    /// Oldest first; a DEALER client may have several requests in flight, a REQ client one.
    private(set) var pending: [Pending] = []

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    mutating func decode(_ seen: BrokerObservation, into events: inout [TraceEvent], undecodable: inout Int) {
        let service = String(decoding: seen.service, as: UTF8.self)
        guard let envelope = try? Envelope.decodeChecked(seen.body) else {
            undecodable += 1
            // An answer without an Envelope still ends its request.
            switch seen.kind {
            case .reply, .rejected: _ = takePending(client: seen.client, service: seen.service, key: "")
            case .request, .faulted: break
            }
            return
        }
        switch seen.kind {
        case .request:
            var event = Self.requestEvent(envelope, service: service, client: seen.client, at: seen.atUnixNanos)
            let known = !event.session.isEmpty
            // A service call made outside any session's action has no timeline to join: not kept
            // waiting for its reply (a busy service would crowd the requests that have one out).
            if !known, envelope.holds(Flowbus_V1_ServiceCall.self) { return }
            if known { events.append(event) }
            event.session = envelope.session
            if pending.count >= limit { pending.removeFirst(pending.count - limit + 1) }
            pending.append(Pending(client: seen.client, service: seen.service, event: event, recorded: known))
        case .faulted(let verdict):
            var event = Self.requestEvent(envelope, service: service, client: seen.client, at: seen.atUnixNanos)
            guard !event.session.isEmpty else { return }
            let rule = verdict.ruleID ?? "?"
            if case .drop = verdict {
                event.kind = .dropped
                event.message = "dropped by fault rule \(rule)" + (event.message.map { " (\($0))" } ?? "")
            } else {
                event.kind = .fault
                event.message = "\(verdict.effectText) by fault rule \(rule)"
            }
            events.append(event)
        case .reply, .rejected:
            let request = takePending(client: seen.client, service: seen.service, key: envelope.idempotencyKey)
            var event = Self.answerEvent(envelope, of: seen, service: service, request: request?.event)
            if event.session.isEmpty { event.session = request?.event.session ?? "" }
            guard !event.session.isEmpty else { return }
            if var request, !request.recorded {
                request.event.session = event.session
                events.append(request.event)
            }
            events.append(event)
        }
    }

    /// The oldest request of this client to this service, preferring the one with the reply's idempotency key.
    private mutating func takePending(client: Frame, service: Frame, key: String) -> Pending? {
        let index = (key.isEmpty ? nil : pending.firstIndex { $0.client == client && $0.service == service && $0.event.idempotencyKey == key })
            ?? pending.firstIndex { $0.client == client && $0.service == service }
        guard let index else { return nil }
        return pending.remove(at: index)
    }

    static func requestEvent(_ envelope: Envelope, service: String, client: Frame, at: Int64) -> TraceEvent {
        var event = TraceEvent(kind: .call, session: envelope.session, atUnixNanos: at,
                               from: envelope.writer.isEmpty ? client.printable : envelope.writer)
        event.service = service
        if !envelope.idempotencyKey.isEmpty { event.idempotencyKey = envelope.idempotencyKey }
        if envelope.incarnation > 0 { event.incarnation = envelope.incarnation }
        if let intent = try? envelope.unwrap(Flowbus_V1_Intent.self) {
            event.kind = .intent
            event.action = intent.action
            event.screen = intent.screen
            event.version = intent.screenVersion
        } else if let call = try? envelope.unwrap(Flowbus_V1_CoordinatorCall.self) {
            event.action = call.method
            if call.expectedNavVersion > 0 { event.version = call.expectedNavVersion }
            if !call.ops.isEmpty { event.message = TraceDecoding.describe(call.ops) }
        } else if let call = try? envelope.unwrap(Flowbus_V1_ServiceCall.self) {
            event.action = call.method
        } else {
            event.action = envelope.kind.split(separator: ".").last.map(String.init) ?? envelope.kind
        }
        return event
    }

    static func answerEvent(_ envelope: Envelope, of seen: BrokerObservation, service: String, request: TraceEvent?) -> TraceEvent {
        let worker = String(decoding: seen.worker, as: UTF8.self)
        // The reply's writer names the process as its Clone writes do (`vm-checkout/0`: plugin and replica).
        let process = envelope.writer.isEmpty ? (worker.split(separator: "/").first.map(String.init) ?? service) : envelope.writer
        var event = TraceEvent(kind: .reply, session: envelope.session, atUnixNanos: seen.atUnixNanos, from: process)
        if case .rejected(let reason) = seen.kind {
            event.kind = .refused
            event.from = "broker"
            event.message = reason
        } else if !worker.isEmpty {
            event.worker = worker
        }
        event.service = service
        event.to = request?.from ?? seen.client.printable
        event.action = request?.action
        if let key = request?.idempotencyKey ?? (envelope.idempotencyKey.isEmpty ? nil : envelope.idempotencyKey) { event.idempotencyKey = key }
        if envelope.incarnation > 0 { event.incarnation = envelope.incarnation }
        if let asked = request?.incarnation { event.askedBy = asked }
        if let error = envelope.carriedError {
            event.applied = false
            event.error = TraceDecoding.describe(error)
        } else if let reply = try? envelope.unwrap(Flowbus_V1_IntentReply.self) {
            event.applied = reply.applied
            event.version = reply.screenVersion
            if !reply.applied { event.error = TraceDecoding.describe(reply.error) }
        } else if let reply = try? envelope.unwrap(Flowbus_V1_CoordinatorReply.self) {
            event.applied = reply.ok
            if reply.navVersion > 0 { event.version = reply.navVersion }
            if !reply.ok { event.error = TraceDecoding.describe(reply.error) }
            if event.session.isEmpty, let session = reply.result["session"] { event.session = session }
        } else if let reply = try? envelope.unwrap(Flowbus_V1_ServiceReply.self) {
            event.applied = !reply.hasError && reply.refusal.isEmpty
            if reply.hasError {
                event.error = reply.error.message
            } else if !reply.refusal.isEmpty {
                event.error = "refused: \(reply.refusal)"
            }
        }
        return event
    }
}
