import FlowProtocol
import Foundation
import Logging
import Majordomo
import Synchronization
import ZeroMQ

/// How a runtime calls other services on the bus, one request envelope in, one reply envelope
/// out. `post` queues a request and returns at once (answers come in order, on another thread):
/// a coordinator never waits on another process while it holds its state. `request` waits for
/// the answer on the calling thread. `MajordomoCalls` is the real one, over 7/MDP;
/// `InProcessCalls` hands envelopes to runtimes in this process, for tests.
public protocol ServiceCalls: AnyObject, Sendable {
    func post(service: String, body: [UInt8], tries: Int, answer: @escaping @Sendable (Result<[UInt8], ServiceTransportError>) -> Void)
    /// Waits until every posted request has its answer, at most `timeout`; returns whether it got there.
    func waitUntilIdle(timeout: Duration) -> Bool
    func request(service: String, body: [UInt8]) throws(ServiceTransportError) -> [UInt8]
    func stop()
}

extension ServiceCalls {
    public func post(service: String, body: [UInt8], tries: Int = 3) {
        post(service: service, body: body, tries: tries) { _ in }
    }
}

/// `ServiceCalls` over 7/MDP: posts go through a `BusCaller` (a thread of its own), requests
/// through an MDP client made on first use (use `request` from one thread).
public final class MajordomoCalls: ServiceCalls, @unchecked Sendable {
    let bus: PluginBus
    let caller: BusCaller
    let client = Mutex<MajordomoClient?>(nil)

    public init(bus: PluginBus, name: String) throws(MajordomoClientError) {
        self.bus = bus
        self.caller = try bus.makeCaller(name: name)
    }

    public func post(service: String, body: [UInt8], tries: Int, answer: @escaping @Sendable (Result<[UInt8], ServiceTransportError>) -> Void) {
        caller.call(service: service, body: [body], timeout: .seconds(2), tries: tries) { outcome in
            if let reply = outcome.reply {
                guard reply.count == 1 else {
                    return answer(.failure(ServiceTransportError(service: service, reason: "the reply had \(reply.count) body frames instead of one envelope")))
                }
                answer(.success(reply[0]))
            } else {
                answer(.failure(ServiceTransportError(service: service, reason: outcome.failure ?? "no reply")))
            }
        }
    }

    public func waitUntilIdle(timeout: Duration) -> Bool {
        caller.waitUntilIdle(timeout: timeout)
    }

    public func request(service: String, body: [UInt8]) throws(ServiceTransportError) -> [UInt8] {
        let result: Result<[Frame], ServiceTransportError> = client.withLock { client in
            do {
                if client == nil {
                    client = try MajordomoClient(
                        context: bus.context, endpoint: bus.environment.broker, configuration: bus.clientConfiguration(), logger: bus.logger)
                }
                return .success(try client!.request(service: service, body: [body]))
            } catch {
                return .failure(ServiceTransportError(service: service, reason: "\(error)"))
            }
        }
        let reply = try result.get()
        guard reply.count == 1 else { throw ServiceTransportError(service: service, reason: "the reply had \(reply.count) body frames instead of one envelope") }
        return reply[0]
    }

    public func stop() {
        caller.stop()
        client.withLock { $0 = nil }
    }
}

/// Services of this process by name, for tests: runtimes register their `handle`, and each
/// `calls(name:)` is a `ServiceCalls` that reaches them as MDP would, one request at a time per
/// service, posts answered in order on a queue of their own.
public final class InProcessBus: Sendable {
    struct Service {
        var lock: NSLock
        var handle: @Sendable (Envelope) -> Envelope
    }

    let services = Mutex<[String: Service]>([:])
    /// Every request delivered, in order: (service, envelope).
    let log = Mutex<[(service: String, envelope: Envelope)]>([])

    public init() {}

    /// Serves `service` with `handle` (replacing any earlier handler: a restart).
    public func register(_ service: String, handle: @escaping @Sendable (Envelope) -> Envelope) {
        services.withLock { $0[service] = Service(lock: NSLock(), handle: handle) }
    }

    /// Takes `service` off the bus: requests to it fail as if its worker were gone.
    public func unregister(_ service: String) {
        services.withLock { $0[service] = nil }
    }

    /// The requests delivered to `service` so far.
    public func delivered(to service: String) -> [Envelope] {
        log.withLock { $0.filter { $0.service == service }.map(\.envelope) }
    }

    public func calls(name: String) -> InProcessCalls {
        InProcessCalls(bus: self, name: name)
    }

    /// Delivers one request envelope to `service` and returns the reply envelope's bytes.
    public func deliver(service: String, body: [UInt8]) throws(ServiceTransportError) -> [UInt8] {
        guard let target = services.withLock({ $0[service] }) else {
            throw ServiceTransportError(service: service, reason: "no handler is registered for \(service)")
        }
        let envelope: Envelope
        do {
            envelope = try Envelope.decodeChecked(body)
        } catch {
            throw ServiceTransportError(service: service, reason: "the request is not an envelope: \(error)")
        }
        log.withLock { $0.append((service, envelope)) }
        target.lock.lock()
        let reply = target.handle(envelope)
        target.lock.unlock()
        do {
            return try reply.encoded()
        } catch {
            throw ServiceTransportError(service: service, reason: "the reply could not be encoded: \(error)")
        }
    }
}

/// One caller on an `InProcessBus`.
public final class InProcessCalls: ServiceCalls, @unchecked Sendable {
    let bus: InProcessBus
    let queue: DispatchQueue
    let group = DispatchGroup()

    init(bus: InProcessBus, name: String) {
        self.bus = bus
        self.queue = DispatchQueue(label: "flowbus.in-process.\(name)")
    }

    public func post(service: String, body: [UInt8], tries: Int, answer: @escaping @Sendable (Result<[UInt8], ServiceTransportError>) -> Void) {
        queue.async(group: group) { [bus] in
            do throws(ServiceTransportError) {
                answer(.success(try bus.deliver(service: service, body: body)))
            } catch {
                answer(.failure(error))
            }
        }
    }

    public func waitUntilIdle(timeout: Duration) -> Bool {
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        return group.wait(timeout: .now() + seconds) == .success
    }

    public func request(service: String, body: [UInt8]) throws(ServiceTransportError) -> [UInt8] {
        try bus.deliver(service: service, body: body)
    }

    public func stop() {}
}
