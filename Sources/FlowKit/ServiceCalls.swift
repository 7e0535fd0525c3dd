import FlowProtocol
import Foundation
import Logging
import Majordomo
import Synchronization
import ZeroMQ

/// How a runtime calls other services on the bus, one request envelope in, one reply envelope
/// out. `post` queues a request and returns at once (answers come in order per lane, on other threads):
/// a coordinator never waits on another process while it holds its state. `request` waits for
/// the answer on the calling thread. `MajordomoCalls` is the real one, over 7/MDP;
/// `InProcessCalls` hands envelopes to runtimes in this process, for tests.
public protocol ServiceCalls: AnyObject, Sendable {
    /// Sends `body` (its idempotency key makes every try the same request) up to `tries` times,
    /// each waiting `ServiceCallPolicy.postTimeout`, behind the earlier posts of the same `lane`
    /// (a session: its calls keep their order; other sessions' calls do not wait for them).
    func post(service: String, body: [UInt8], lane: String, tries: Int, answer: @escaping @Sendable (Result<[UInt8], ServiceTransportError>) -> Void)
    /// Waits until every request posted on `lane` (nil: on any lane) has its answer, at most
    /// `timeout`; returns whether it got there.
    func waitUntilIdle(lane: String?, timeout: Duration) -> Bool
    func request(service: String, body: [UInt8]) throws(ServiceTransportError) -> [UInt8]
    func stop()
}

extension ServiceCalls {
    public func post(service: String, body: [UInt8], lane: String = "", tries: Int = ServiceCallPolicy.postTries) {
        post(service: service, body: body, lane: lane, tries: tries) { _ in }
    }

    public func waitUntilIdle(timeout: Duration) -> Bool {
        waitUntilIdle(lane: nil, timeout: timeout)
    }
}

/// How patient the runtimes' calls to one another are. Every call carries an idempotency key
/// and every runtime answers a retry as it answered the first try, so retrying is always safe:
/// a lost request or reply costs one short timeout, and a peer stopped for a few seconds (or
/// restarted by its supervisor) is waited for instead of given up on.
public enum ServiceCallPolicy {
    /// Each try waits 1 s: a runtime answers in milliseconds, so a try that takes longer was lost
    /// (or its peer is stalled, and the tries wait for it at the broker). Many short tries make a
    /// call survive heavy loss: at 30 % lost, ten tries all fail once in 170,000 calls.
    public static let postTimeout: Duration = .seconds(1)
    public static let timeoutCap: Duration = .seconds(1)
    /// Posted calls (a coordinator's navigation, child flows, view-model lifecycle): 20 s in all.
    public static let postTries = 20
    /// Awaited calls (a non-owner's navigation, made while a client waits for its intent):
    /// 10 s, less than a client's own patience, so the client hears UNAVAILABLE rather than nothing.
    public static let requestTimeout: Duration = .seconds(1)
    public static let requestTries = 10
}

/// `ServiceCalls` over 7/MDP: posts go through a `BusCaller` (a thread of its own), requests
/// through an MDP client made on first use (use `request` from one thread).
public final class MajordomoCalls: ServiceCalls, @unchecked Sendable {
    let bus: PluginBus
    let caller: BusCaller
    let clients = Mutex<[ClientBox]>([])

    /// `threads`: posts in flight at once (one MDP client each).
    public init(bus: PluginBus, name: String, threads: Int = 4) throws(MajordomoClientError) {
        self.bus = bus
        self.caller = try bus.makeCaller(name: name, threads: threads)
    }

    public func post(service: String, body: [UInt8], lane: String, tries: Int, answer: @escaping @Sendable (Result<[UInt8], ServiceTransportError>) -> Void) {
        let key = Self.key(of: body)
        caller.call(service: service, body: [body], lane: lane, timeout: ServiceCallPolicy.postTimeout, tries: tries,
                    accepts: { Envelope.reply($0, answers: key).answers }) { outcome in
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

    /// The idempotency key of a request envelope ("" when it has none or is not one).
    static func key(of body: [UInt8]) -> String {
        (try? Envelope.decodeChecked(body))?.idempotencyKey ?? ""
    }

    public func waitUntilIdle(lane: String?, timeout: Duration) -> Bool {
        caller.waitUntilIdle(lane: lane, timeout: timeout)
    }

    /// Waits on the calling thread; several threads may ask at once, each on an idle client of
    /// a small pool (an MDP client is not thread-safe, and one would make them queue).
    public func request(service: String, body: [UInt8]) throws(ServiceTransportError) -> [UInt8] {
        let idle = clients.withLock { $0.popLast() }
        let box: ClientBox
        if let idle {
            box = idle
        } else {
            do {
                box = ClientBox(try MajordomoClient(
                    context: bus.context, endpoint: bus.environment.broker,
                    configuration: bus.clientConfiguration(
                        timeout: ServiceCallPolicy.requestTimeout, tries: ServiceCallPolicy.requestTries,
                        timeoutCap: ServiceCallPolicy.timeoutCap),
                    logger: bus.logger))
            } catch {
                throw ServiceTransportError(service: service, reason: "\(error)")
            }
        }
        defer { clients.withLock { $0.append(box) } }
        let reply: [Frame]
        do {
            let key = Self.key(of: body)
            reply = try box.client.request(service: service, body: [body]) { Envelope.reply($0, answers: key).answers }
        } catch {
            throw ServiceTransportError(service: service, reason: "\(error)")
        }
        guard reply.count == 1 else { throw ServiceTransportError(service: service, reason: "the reply had \(reply.count) body frames instead of one envelope") }
        return reply[0]
    }

    public func stop() {
        caller.stop()
        clients.withLock { $0.removeAll() }
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

    /// One queue for every lane: stricter than lanes need, which tests do not mind.
    public func post(service: String, body: [UInt8], lane: String, tries: Int, answer: @escaping @Sendable (Result<[UInt8], ServiceTransportError>) -> Void) {
        queue.async(group: group) { [bus] in
            do throws(ServiceTransportError) {
                answer(.success(try bus.deliver(service: service, body: body)))
            } catch {
                answer(.failure(error))
            }
        }
    }

    public func waitUntilIdle(lane: String?, timeout: Duration) -> Bool {
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        return group.wait(timeout: .now() + seconds) == .success
    }

    public func request(service: String, body: [UInt8]) throws(ServiceTransportError) -> [UInt8] {
        try bus.deliver(service: service, body: body)
    }

    public func stop() {}
}
