import FlowProtocol

/// How a bus adapter of an app service reaches the service: over MDP in the plugins
/// (`MajordomoServiceTransport`), directly in tests.
public protocol ServiceTransport: AnyObject {
    /// Sends `call` to the MDP service `service` (e.g. `svc.users`) and returns its reply.
    func call(service: String, _ call: Flowbus_V1_ServiceCall) throws(ServiceTransportError) -> Flowbus_V1_ServiceReply
}

/// The service could not be reached or answered with something unreadable.
public struct ServiceTransportError: Error, Equatable, Sendable, CustomStringConvertible {
    public var service: String
    public var reason: String

    public init(service: String, reason: String) {
        self.service = service
        self.reason = reason
    }

    public var description: String {
        "the service \(service) did not answer: \(reason); check that the plugin serving it runs (`flowbus ps`)"
    }
}

/// The server side of an app service: one call in, one reply out. Served by `ServiceWorkerRuntime`.
public typealias ServiceHandler = (Flowbus_V1_ServiceCall) -> Flowbus_V1_ServiceReply

/// A transport that calls handlers in this process: for tests of bus adapters against the real handlers.
public final class InProcessServiceTransport: ServiceTransport {
    var handlers: [String: ServiceHandler]

    public init(_ handlers: [String: ServiceHandler]) {
        self.handlers = handlers
    }

    public func call(service: String, _ call: Flowbus_V1_ServiceCall) throws(ServiceTransportError) -> Flowbus_V1_ServiceReply {
        guard let handler = handlers[service] else {
            throw ServiceTransportError(service: service, reason: "no handler registered for \(service)")
        }
        return handler(call)
    }
}
