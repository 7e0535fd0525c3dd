import Foundation
import Logging
import Majordomo
import ZeroMQ

/// Sends MDP requests in order on a thread of its own, so that a coordinator never blocks
/// its worker while it waits for another process (two coordinators calling each other
/// synchronously would deadlock). Each completion runs on the caller's thread.
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
        var completion: @Sendable (Outcome) -> Void
    }

    private let condition = NSCondition()
    private var jobs: [Job] = []
    /// Whether a job has left `jobs` and its reply is not back yet.
    private var busy = false
    private var stopping = false
    private var thread: Thread?
    private let name: String

    public init(context: ZMQContext, endpoint: String, configuration: ClientConfiguration, name: String, logger: Logger) throws(MajordomoClientError) {
        self.name = name
        let client = try MajordomoClient(context: context, endpoint: endpoint, configuration: configuration, logger: logger)
        let box = ClientBox(client)
        let thread = Thread { [unowned self] in self.loop(box.client, logger: logger) }
        thread.name = "flowbus-caller-\(name)"
        self.thread = thread
        thread.start()
    }

    /// Queues a request; `completion` gets the reply frames or why there was none.
    public func call(
        service: String, body: [Frame], timeout: Duration = .seconds(2), tries: Int = 3,
        completion: @escaping @Sendable (Outcome) -> Void = { _ in }
    ) {
        condition.lock()
        jobs.append(Job(service: service, body: body, timeout: timeout, tries: tries, completion: completion))
        condition.signal()
        condition.unlock()
    }

    /// Waits until every request queued so far has its reply (or failed), at most `timeout`;
    /// returns whether it got there. Lets a coordinator make sure a child flow it started is live
    /// before the screen that flow acts on is shown.
    @discardableResult
    public func waitUntilIdle(timeout: Duration) -> Bool {
        let deadline = Date().addingTimeInterval(Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18)
        condition.lock()
        defer { condition.unlock() }
        while !jobs.isEmpty || busy {
            guard condition.wait(until: deadline) else { return jobs.isEmpty && !busy }
        }
        return true
    }

    /// Requests waiting to be sent.
    public var backlog: Int {
        condition.lock()
        defer { condition.unlock() }
        return jobs.count
    }

    public func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
    }

    private func loop(_ client: MajordomoClient, logger: Logger) {
        while true {
            condition.lock()
            while jobs.isEmpty && !stopping { condition.wait() }
            if stopping && jobs.isEmpty {
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            busy = true
            condition.unlock()
            defer {
                condition.lock()
                busy = false
                condition.broadcast()
                condition.unlock()
            }
            do {
                let reply = try client.request(service: job.service, body: job.body, timeout: job.timeout, tries: job.tries)
                job.completion(Outcome(reply: reply, failure: nil))
            } catch {
                logger.warning("call failed", metadata: ["flowbus.service": "\(job.service)", "flowbus.error": "\(error)", "flowbus.caller": "\(name)"])
                job.completion(Outcome(reply: nil, failure: "\(error)"))
            }
        }
    }
}

/// Carries the non-Sendable client into the one thread that uses it.
final class ClientBox: @unchecked Sendable {
    let client: MajordomoClient
    init(_ client: MajordomoClient) { self.client = client }
}
