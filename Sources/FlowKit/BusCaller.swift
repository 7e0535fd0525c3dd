import Foundation
import Logging
import Majordomo
import MessagePath
import Synchronization
import ZeroMQ

/// Sends MDP requests on threads of its own, so that a coordinator never blocks its worker while
/// it waits for another process (two coordinators calling each other synchronously would
/// deadlock). Each completion runs on one of those threads.
///
/// Requests of one lane (a session) go out one at a time, in the order they were queued; lanes
/// are independent, served by a few threads with a socket each. So a call retried for seconds
/// (its peer lost it, or is stalled) holds up its own session's later calls, whose order
/// matters, and nobody else's.
public final class BusCaller: @unchecked Sendable {
    public struct Outcome: Sendable {
        public var reply: [Frame]?
        public var failure: String?
    }

    struct Job {
        var service: String
        var body: [Frame]
        var timeout: Duration
        var tries: Int
        var accepts: @Sendable ([Frame]) -> Bool
        var completion: @Sendable (Outcome) -> Void
    }

    /// Guards `lanes` and `stopping`; the caller threads wait on it for work.
    private let condition = NSCondition()
    /// What `waitUntilIdle` waits on, apart from the caller threads: a call's end wakes only
    /// those who wait for idleness, never the idle caller threads (each would wake to find
    /// nothing to do, some 3 wake-ups of the process per call with 4 threads).
    private let idleness = NSCondition()
    private var lanes = LaneQueue<Job>()
    private var stopping = false
    private let name: String
    /// The kernel's ids of the caller threads, as each starts (tests read their scheduling).
    private let startedThreads = Mutex<[Int]>([])

    /// Opens `threads` MDP clients, one per thread.
    public init(
        context: ZMQContext, endpoint: String, configuration: ClientConfiguration, name: String, logger: Logger, threads: Int = 4
    ) throws(MajordomoClientError) {
        self.name = name
        var clients: [ClientBox] = []
        for _ in 0..<max(1, threads) {
            clients.append(ClientBox(try MajordomoClient(context: context, endpoint: endpoint, configuration: configuration, logger: logger)))
        }
        for (index, box) in clients.enumerated() {
            let thread = Thread { [unowned self] in
                ThreadName.set("fb-call-\(index)")
                if let id = Self.currentThreadID() { startedThreads.withLock { $0.append(id) } }
                self.loop(box.client, logger: logger)
            }
            thread.name = "flowbus-caller-\(name)-\(index)"
            thread.start()
        }
    }

    /// Queues a request on `lane` (behind that lane's earlier ones); `completion` gets the reply
    /// frames or why there was none. `accepts` tells this request's reply from a late one of an
    /// earlier request on the same socket (`Envelope.reply(_:answers:)`), which is dropped.
    public func call(
        service: String, body: [Frame], lane: String = "", timeout: Duration = .seconds(2), tries: Int = 3,
        accepts: @escaping @Sendable ([Frame]) -> Bool = { _ in true },
        completion: @escaping @Sendable (Outcome) -> Void = { _ in }
    ) {
        condition.lock()
        let becameReady = lanes.append(
            Job(service: service, body: body, timeout: timeout, tries: tries, accepts: accepts, completion: completion), lane: lane)
        condition.unlock()
        // Woken after the unlock, and only for a lane that became ready (the thread ending a
        // lane's call takes its next): see `LaneExecutor.run`.
        if becameReady { condition.signal() }
    }

    /// Waits until every request queued so far on `lane` (nil: on every lane) has its reply (or
    /// failed), at most `timeout`; returns whether it got there. Lets a coordinator make sure a
    /// child flow it started is live before the screen that flow acts on is shown.
    @discardableResult
    public func waitUntilIdle(lane: String? = nil, timeout: Duration) -> Bool {
        let deadline = Date().addingTimeInterval(timeout.seconds)
        func idle() -> Bool {
            condition.lock()
            defer { condition.unlock() }
            return lane.map { lanes.isIdle(lane: $0) } ?? lanes.isIdle
        }
        // Checked under `idleness`, which `finished` takes to wake us: no end slips between the
        // check and the wait.
        idleness.lock()
        defer { idleness.unlock() }
        while !idle() {
            guard idleness.wait(until: deadline) else { return idle() }
        }
        return true
    }

    /// The kernel's ids of the caller threads started so far.
    var threadIDs: [Int] { startedThreads.withLock { $0 } }

    /// The calling thread's id in the kernel (`/proc/thread-self` names it: `<pid>/task/<tid>`).
    static func currentThreadID() -> Int? {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self"))
            .flatMap { $0.split(separator: "/").last }.flatMap { Int($0) }
    }

    /// Requests waiting to be sent.
    public var backlog: Int {
        condition.lock()
        defer { condition.unlock() }
        return lanes.waiting
    }

    public func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
        idleness.lock()
        idleness.broadcast()
        idleness.unlock()
    }

    /// The next job of a ready lane, which is then busy until `finished`; nil when stopping with nothing left.
    private func next() -> (lane: String, job: Job)? {
        condition.lock()
        defer { condition.unlock() }
        while !lanes.hasReady && !(stopping && lanes.waiting == 0) { condition.wait() }
        return lanes.take().map { ($0.lane, $0.item) }
    }

    /// Ends `lane`'s job. Its next job, now ready, is taken by the thread that ran this one (it
    /// goes straight back to `next`), and a job posted to another lane meanwhile woke a thread
    /// when it was posted, or waits for the first thread free: no caller thread is woken here.
    /// Only those waiting for idleness are.
    private func finished(_ lane: String) {
        condition.lock()
        lanes.finished(lane)
        condition.unlock()
        idleness.lock()
        idleness.broadcast()
        idleness.unlock()
    }

    private func loop(_ client: MajordomoClient, logger: Logger) {
        while let (lane, job) = next() {
            do {
                let reply = try client.request(service: job.service, body: job.body, timeout: job.timeout, tries: job.tries, accepts: job.accepts)
                job.completion(Outcome(reply: reply, failure: nil))
            } catch {
                logger.warning("call failed", metadata: [
                    "flowbus.service": "\(job.service)", "flowbus.error": "\(error)", "flowbus.caller": "\(name)", "flowbus.lane": "\(lane)",
                ])
                job.completion(Outcome(reply: nil, failure: "\(error)"))
            }
            finished(lane)
        }
    }
}

/// Carries the non-Sendable client into the one thread that uses it.
final class ClientBox: @unchecked Sendable {
    let client: MajordomoClient
    init(_ client: MajordomoClient) { self.client = client }
}
