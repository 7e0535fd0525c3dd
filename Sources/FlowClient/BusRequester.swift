import Dispatch
import FlowProtocol
import Foundation
import Logging
import Majordomo
import Synchronization
import ZeroMQ

/// `MajordomoClient`s on threads of their own. A client is not thread-safe, so every request
/// goes through here; callers await the reply without blocking Swift's cooperative pool. With one
/// lane (a session client's) requests go one at a time, in the order asked; with several (the
/// simulator's, shared by thousands of sessions) that many are in flight at once, each lane taking
/// the next request waiting.
public final class BusRequester: Sendable {
    public let endpoint: String
    public let lanes: Int
    private let queue: RequestQueue

    /// Opens `lanes` clients, each on a new thread; throws when a socket cannot be made.
    public init(
        context: ZMQContext, endpoints: BusEndpoints, configuration: ClientConfiguration, lanes: Int = 1, logger: Logger
    ) throws(SessionClientError) {
        endpoint = endpoints.broker
        self.lanes = max(1, lanes)
        queue = RequestQueue(consumers: self.lanes)
        var configuration = configuration
        if let curve = try endpoints.curve() {
            configuration.curveServerKey = curve.serverKey
            configuration.curveKeyPair = curve.keyPair
        }
        for lane in 0..<self.lanes {
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
            thread.name = self.lanes == 1 ? "flowbus-client-requests" : "flowbus-client-requests-\(lane)"
            thread.start()
            ready.wait()
            if case .failure(let error) = opened.withLock({ $0 }) {
                // The lanes already running end with the queue.
                stop(startedLanes: lane)
                throw error
            }
        }
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
                let (answers, envelope) = Envelope.reply(frames, answers: key)
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

    /// Ends the threads after the requests already queued; later requests fail with `.stopped`.
    public func stop() {
        stop(startedLanes: lanes)
    }

    private func stop(startedLanes: Int) {
        guard queue.close() else { return }
        for _ in 0..<startedLanes { queue.exited.wait() }
    }

    /// Requests waiting for a lane now.
    public var waiting: Int { queue.waiting }

    deinit { stop() }
}

/// The jobs waiting for the request threads: one semaphore count per job, one more per thread
/// for the close.
private final class RequestQueue: Sendable {
    typealias Job = @Sendable (MajordomoClient) -> Void
    private let jobs = Mutex<(open: Bool, queue: [Job], head: Int)>((true, [], 0))
    private let signal = DispatchSemaphore(value: 0)
    private let consumers: Int
    let exited = DispatchSemaphore(value: 0)

    init(consumers: Int) {
        self.consumers = consumers
    }

    var waiting: Int { jobs.withLock { $0.queue.count - $0.head } }

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
        return jobs.withLock { jobs -> Job? in
            guard jobs.head < jobs.queue.count else { return nil }
            let job = jobs.queue[jobs.head]
            jobs.head += 1
            // Taken jobs are dropped in bulk: a long queue costs O(1) per job, not a shift each.
            if jobs.head == jobs.queue.count {
                jobs.queue.removeAll(keepingCapacity: true)
                jobs.head = 0
            } else if jobs.head >= 1024, jobs.head * 2 >= jobs.queue.count {
                jobs.queue.removeFirst(jobs.head)
                jobs.head = 0
            }
            return job
        }
    }

    /// Closes the queue; returns whether it was open (only then is there a thread to wait for).
    func close() -> Bool {
        let wasOpen = jobs.withLock { jobs -> Bool in
            defer { jobs.open = false }
            return jobs.open
        }
        if wasOpen { for _ in 0..<consumers { signal.signal() } }
        return wasOpen
    }
}
