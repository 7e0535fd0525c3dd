import Foundation

/// Runs work on a few threads, one piece at a time per lane, in the order it was given: a
/// coordinator handles one session's requests in order (a retry finds its first try's answer)
/// while another session's request, waiting on a slow peer, holds up nobody else.
final class LaneExecutor: @unchecked Sendable {
    private let condition = NSCondition()
    private var lanes = LaneQueue<() -> Void>()
    private var stopping = false
    private let finished = DispatchGroup()

    init(name: String, threads: Int) {
        for index in 0..<max(1, threads) {
            finished.enter()
            let thread = Thread { [self] in
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
            condition.unlock()
            work()
            condition.lock()
            if lanes.finished(lane) { condition.signal() }
        }
        condition.unlock()
    }
}
