import Clone
import FlowProtocol
import Foundation
import Logging
import Majordomo
import SwiftProtobuf
import ZeroMQ

/// A context and a request thread to one bus: what a session client starts from, and what tools
/// (`flowbus outbox`, `flowbus sessions`) use for one-off calls.
public final class BusConnection: Sendable {
    public let endpoints: BusEndpoints
    public let options: SessionClientOptions
    public let context: ZMQContext
    public let requester: BusRequester
    let logger: Logger

    /// `lanes` requests may be in flight at once (one per thread; see `BusRequester`).
    public init(
        endpoints: BusEndpoints, options: SessionClientOptions = .init(), lanes: Int = 1, logger: Logger = Logger(label: "flowbus.client")
    ) throws(SessionClientError) {
        self.endpoints = endpoints
        self.options = options
        self.logger = logger
        do { context = try ZMQContext() } catch { throw .cannotConnect(endpoint: endpoints.broker, reason: "\(error)") }
        var configuration = ClientConfiguration(timeout: options.requestTimeout, tries: options.requestTries, timeoutCap: options.requestTimeoutCap)
        configuration.routingID = nil
        configuration.resendWhenAnswered = ErrorReply.damagedFrame
        configuration.retryWhenAnswered = ErrorReply.unsettledFrame
        requester = try BusRequester(context: context, endpoints: endpoints, configuration: configuration, lanes: lanes, logger: logger)
    }

    /// Asks coord.app for a new session (or to attach to `requested`, presenting `capability`);
    /// returns its id and, from a closed host, its drive and watch capabilities.
    /// Opens a new session, or attaches to `requested`; with `create`, an id no open session has
    /// opens a new session under it (without, the owner refuses it).
    public func openSession(requested: String?, capability: String? = nil, create: Bool = false) async throws(SessionClientError) -> SessionGrant {
        var args: [String: String] = [:]
        if let requested { args["session"] = requested }
        if create { args["create"] = "true" }
        let reply = try await Self.coordinatorCall(
            requester, Self.call("openSession", args: args), session: "", writer: options.name, capability: capability)
        guard let session = reply.result["session"], !session.isEmpty else {
            throw .unexpectedReply(service: "coord.app", kind: "openSession reply without a session id")
        }
        return SessionGrant(session: session, drive: reply.result["capability"] ?? capability, watch: reply.result["watch"])
    }

    /// Calls `service` with a ServiceCall (e.g. `svc.mail` "outbox") and returns its reply.
    public func serviceCall(_ service: String, method: String, args: [String: String] = [:]) async throws(SessionClientError) -> Flowbus_V1_ServiceReply {
        var call = Flowbus_V1_ServiceCall()
        call.method = method
        call.args = args
        let envelope = try Self.envelope(call, session: "", key: UUID().uuidString, writer: options.name)
        let reply = try await requester.request(service: service, envelope: envelope)
        let answer: Flowbus_V1_ServiceReply = try Self.unwrap(reply, from: service, method: method)
        if answer.hasError { throw .refused(service: service, method: method, error: answer.error) }
        return answer
    }

    /// Stops the request thread.
    public func stop() { requester.stop() }

    static func call(_ method: String, args: [String: String] = [:]) -> Flowbus_V1_CoordinatorCall {
        var call = Flowbus_V1_CoordinatorCall()
        call.method = method
        call.args = args
        return call
    }

    static func coordinatorCall(
        _ requester: BusRequester, _ call: Flowbus_V1_CoordinatorCall, session: String, writer: String, coordinator: String = "app",
        capability: String? = nil
    ) async throws(SessionClientError) -> Flowbus_V1_CoordinatorReply {
        let service = "coord.\(coordinator)"
        let envelope = try envelope(call, session: session, key: UUID().uuidString, writer: writer, capability: capability)
        let reply = try await requester.request(service: service, envelope: envelope)
        let answer: Flowbus_V1_CoordinatorReply = try unwrap(reply, from: service, method: call.method)
        guard answer.ok else { throw .refused(service: service, method: call.method, error: answer.error) }
        return answer
    }

    static func envelope(
        _ message: some SwiftProtobuf.Message, session: String, key: String, writer: String, capability: String? = nil
    ) throws(SessionClientError) -> Envelope {
        do {
            var envelope = try Envelope.wrapping(message, session: session, idempotencyKey: key, writer: writer)
            if let capability { envelope.capability = capability }
            return envelope
        } catch {
            throw .unexpectedReply(service: "", kind: "unencodable \(type(of: message).protoMessageName): \(error)")
        }
    }

    /// The reply's payload as `M`; an Error envelope (UNKNOWN_SERVICE from the broker, MALFORMED…) is thrown as a refusal.
    static func unwrap<M: SwiftProtobuf.Message>(_ reply: Envelope, from service: String, method: String) throws(SessionClientError) -> M {
        if let error = reply.carriedError { throw .refused(service: service, method: method, error: error) }
        do {
            return try reply.unwrap(M.self)
        } catch {
            throw .unexpectedReply(service: service, kind: reply.kind)
        }
    }
}

/// A session and what its holder may do with it: openSession's answer. On an open host the
/// capabilities are nil (nothing is checked).
public struct SessionGrant: Sendable, Equatable {
    public var session: String
    /// The token to act on the session (intents, touch, close, attach again).
    public var drive: String?
    /// The token to only read it: give it to observers.
    public var watch: String?

    public init(session: String, drive: String?, watch: String?) {
        self.session = session
        self.drive = drive
        self.watch = watch
    }
}
