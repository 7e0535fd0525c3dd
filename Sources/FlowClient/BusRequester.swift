import Dispatch
import FlowProtocol
import Foundation
import Logging
import Majordomo
import Synchronization
import ZeroMQ

/// One `MajordomoClient` on a thread of its own. The client is not thread-safe, so every request
/// of a session client goes through here, one at a time, in the order asked; callers await the
/// reply without blocking Swift's cooperative pool.
public final class BusRequester: Sendable {
    public let endpoint: String
    private let queue = RequestQueue()

    /// Opens the client on a new thread; throws when the socket cannot be made.
    public init(context: ZMQContext, endpoints: BusEndpoints, configuration: ClientConfiguration, logger: Logger) throws(SessionClientError) {
        endpoint = endpoints.broker
        var configuration = configuration
        if let curve = try endpoints.curve() {
            configuration.curveServerKey = curve.serverKey
            configuration.curveKeyPair = curve.keyPair
        }
        let opened = Mutex<Result<Void, SessionClientError>?>(nil)
        let ready = DispatchSemaphore(value: 0)
        let thread = Thread { [queue, configuration] in
            defer { queue.exited.signal() }
            let client: MajordomoClient
            do {
                client = try MajordomoClient(context: context, endpoint: endpoints.broker, configuration: configuration, logger: logger)
                opened.withLock { $0 = .success(()) }
                ready.signal()
            } catch {
                opened.withLock { $0 = .failure(.cannotConnect(endpoint: endpoints.broker, reason: "\(error)")) }
                ready.signal()
                return
            }
            while let job = queue.next() { job(client) }
        }
        thread.name = "flowbus-client-requests"
        thread.start()
        ready.wait()
        if case .failure(let error) = opened.withLock({ $0 }) { throw error }
    }

    /// Sends one envelope to `service` and returns the reply envelope. A timeout retries on a new
    /// socket with the same body (so the same idempotency key), as `ClientConfiguration` says.
    public func request(service: String, envelope: Envelope, timeout: Duration? = nil) async throws(SessionClientError) -> Envelope {
        let body: [UInt8]
        do { body = try envelope.encoded() } catch { throw .unexpectedReply(service: service, kind: "\(error)") }
        let result: Result<Envelope, SessionClientError> = await withCheckedContinuation { continuation in
            let key = envelope.idempotencyKey
            let accepted = queue.add { client in
                continuation.resume(returning: Self.exchange(client, service: service, body: body, key: key, timeout: timeout))
            }
            if !accepted { continuation.resume(returning: .failure(.stopped)) }
        }
        return try result.get()
    }

    private static func exchange(
        _ client: MajordomoClient, service: String, body: [UInt8], key: String, timeout: Duration?
    ) -> Result<Envelope, SessionClientError> {
        do {
            // The reply is decoded once, to tell whose it is; the one accepted is returned as is.
            var accepted: Envelope?
            let frames = try client.request(service: service, body: [body], timeout: timeout) { frames in
                let (answers, envelope) = Self.answers(key, frames)
                if answers { accepted = envelope }
                return answers
            }
            guard frames.count == 1 else {
                return .failure(.unexpectedReply(service: service, kind: "reply of \(frames.count) body frames"))
            }
            return .success(try accepted ?? Envelope.decodeChecked(frames[0]))
        } catch let error as MajordomoClientError {
            return .failure(.noReply(service: service, reason: error.description))
        } catch {
            return .failure(.unexpectedReply(service: service, kind: "undecodable reply (\(error))"))
        }
    }

    /// Whether a reply answers the request with idempotency key `key`: one that names another key
    /// answered an earlier request (its duplicate or an earlier try came back late) and is not
    /// this one's. A reply without a key (the broker's refusals) answers whatever was asked.
    /// Also returns the reply's envelope when it decoded.
    static func answers(_ key: String, _ frames: [Frame]) -> (Bool, Envelope?) {
        guard frames.count == 1, let envelope = try? Envelope.decodeChecked(frames[0]) else { return (true, nil) }
        return (key.isEmpty || envelope.idempotencyKey.isEmpty || envelope.idempotencyKey == key, envelope)
    }

    /// Ends the thread after the requests already queued; later requests fail with `.stopped`.
    public func stop() {
        guard queue.close() else { return }
        queue.exited.wait()
    }

    deinit { stop() }
}

/// The jobs waiting for the request thread: one semaphore count per job, one more for the close.
private final class RequestQueue: Sendable {
    typealias Job = @Sendable (MajordomoClient) -> Void
    private let jobs = Mutex<(open: Bool, queue: [Job])>((true, []))
    private let signal = DispatchSemaphore(value: 0)
    let exited = DispatchSemaphore(value: 0)

    /// Queues a job; false once closed.
    func add(_ job: @escaping Job) -> Bool {
        let accepted = jobs.withLock { jobs -> Bool in
            guard jobs.open else { return false }
            jobs.queue.append(job)
            return true
        }
        if accepted { signal.signal() }
        return accepted
    }

    /// The next job, blocking; nil once closed and drained.
    func next() -> Job? {
        signal.wait()
        return jobs.withLock { $0.queue.isEmpty ? nil : $0.queue.removeFirst() }
    }

    /// Closes the queue; returns whether it was open (only then is there a thread to wait for).
    func close() -> Bool {
        let wasOpen = jobs.withLock { jobs -> Bool in
            defer { jobs.open = false }
            return jobs.open
        }
        if wasOpen { signal.signal() }
        return wasOpen
    }
}
