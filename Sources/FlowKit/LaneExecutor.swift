import Foundation
import Logging
import MessagePath

/// Runs work on a few threads, one piece at a time per lane, in the order it was given: a
/// coordinator handles one session's requests in order (a retry finds its first try's answer)
/// while another session's request, waiting on a slow peer, holds up nobody else.
final class LaneExecutor: @unchecked Sendable {
    private let condition = NSCondition()
    private var lanes = LaneQueue<() -> Void>()
    private var stopping = false
    /// When each piece of work now running began, by the lane it belongs to.
    private var running: [String: ContinuousClock.Instant] = [:]
    private let finished = DispatchGroup()

    init(name: String, threads: Int) {
        for index in 0..<max(1, threads) {
            finished.enter()
            let thread = Thread { [self] in
                ThreadName.set("fb-lane-\(index)")
                defer { finished.leave() }
                loop()
            }
            thread.name = "flowbus-\(name)-\(index)"
            thread.start()
        }
    }

    /// Queues `work` behind the earlier work of `lane`.
    func run(lane: String, _ work: @escaping () -> Void) {
        condition.lock()
        lanes.append(work, lane: lane)
        condition.signal()
        condition.unlock()
    }

    /// How long the piece of work running longest has run; nil when none runs. A runtime takes a
    /// piece running past its workers' `busyLimit` for a hung handler (see `stopsHeartbeats`).
    var longestRunning: Duration? {
        condition.lock()
        defer { condition.unlock() }
        return running.values.min().map { ContinuousClock.now - $0 }
    }

    /// Lets the queued work finish, then ends the threads.
    func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
        finished.wait()
    }

    private func loop() {
        condition.lock()
        while true {
            while !lanes.hasReady && !stopping { condition.wait() }
            guard let (lane, work) = lanes.take() else { break }
            running[lane] = .now
            condition.unlock()
            work()
            condition.lock()
            running[lane] = nil
            if lanes.finished(lane) { condition.signal() }
        }
        condition.unlock()
    }
}

extension LaneExecutor {
    /// Whether a runtime serving requests through this executor should stop answering its
    /// broker: a handler has run past `limit`, so the process is taken for hung. Its heartbeats
    /// stop, the broker expires its worker, and the host restarts the process, as it does for a
    /// worker whose handler runs on its own thread (`WorkerConfiguration.busyLimit`). Logged once.
    func stopsHeartbeats(limit: Duration, logged: inout Bool, logger: Logger, service: String) -> Bool {
        guard let longest = longestRunning, longest > limit else { return false }
        if !logged {
            logged = true
            logger.critical("a handler has run for \(longest), past the limit of \(limit): taken for hung, this process stops its heartbeats so the host restarts it", metadata: [
                "flowbus.service": "\(service)",
            ])
        }
        return true
    }
}
