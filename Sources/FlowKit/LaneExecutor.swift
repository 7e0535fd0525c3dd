import Foundation
import Logging
import MessagePath
import Synchronization

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
    /// The kernel's ids of the lane threads, as each starts (tests read their scheduling).
    private let startedThreads = Mutex<[Int]>([])

    init(name: String, threads: Int) {
        for index in 0..<max(1, threads) {
            finished.enter()
            let thread = Thread { [self] in
                ThreadName.set("fb-lane-\(index)")
                if let id = BusCaller.currentThreadID() { startedThreads.withLock { $0.append(id) } }
                defer { finished.leave() }
                loop()
            }
            thread.name = "flowbus-\(name)-\(index)"
            thread.start()
        }
    }

    /// The kernel's ids of the lane threads started so far.
    var threadIDs: [Int] { startedThreads.withLock { $0 } }

    /// Queues `work` behind the earlier work of `lane`.
    ///
    /// A thread is woken only when the lane became ready (work behind a lane in progress is taken
    /// by the thread that finishes it), and after the lock is let go of: woken under it, the
    /// thread would run at once (on a process pinned to one CPU, it takes the CPU from this one),
    /// find the lock held, and sleep again until the unlock woke it a second time.
    func run(lane: String, _ work: @escaping () -> Void) {
        condition.lock()
        let becameReady = lanes.append(work, lane: lane)
        condition.unlock()
        if becameReady { condition.signal() }
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

    /// Takes the next ready lane's work, runs it, and goes on. A lane ready again when its work
    /// ends is taken by this thread at its next look, so nobody else is woken for it; a lane
    /// that became ready while every thread was busy is seen by the first to look.
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
            lanes.finished(lane)
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
