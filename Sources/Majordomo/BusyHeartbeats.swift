import Foundation
import Logging
import MessagePath

/// Keeps workers heart-beating while the thread that owns them is inside a handler.
///
/// A worker is used by one thread; while that thread runs a handler it does not touch the worker,
/// so the worker is lent here for the duration (under a lock, which also orders the memory) and
/// one process-wide thread sends the HEARTBEATs that fall due. Past the worker's `busyLimit` the
/// lending thread is taken for hung: the heartbeats stop and the broker expires the worker.
final class BusyHeartbeats: @unchecked Sendable {
    static let shared = BusyHeartbeats()

    private struct Lent {
        var workers: [MajordomoWorker]
        var since: MonotonicTime
        var warned = false
    }

    private let condition = NSCondition()
    private var lent: [Int: Lent] = [:]
    private var nextID = 0
    private var started = false

    /// Runs `body` with `workers` lent to the heartbeat thread.
    func whileBusy<T>(_ workers: [MajordomoWorker], _ body: () throws -> T) rethrows -> T {
        condition.lock()
        let id = nextID
        nextID += 1
        lent[id] = Lent(workers: workers, since: .now())
        if !started {
            started = true
            let thread = Thread { [unowned self] in self.loop() }
            thread.name = "flowbus-busy-heartbeats"
            thread.start()
        }
        // No signal: the thread looks every 50 ms, well within any heartbeat interval, so a
        // request costs a lock and a table entry, never a thread wake-up.
        condition.unlock()
        defer {
            condition.lock()
            lent[id] = nil
            condition.unlock()
        }
        return try body()
    }

    private func loop() {
        condition.lock()
        while true {
            if lent.isEmpty {
                _ = condition.wait(until: Date(timeIntervalSinceNow: 0.05))
                continue
            }
            let now = MonotonicTime.now()
            for id in lent.keys {
                guard var entry = lent[id] else { continue }
                for worker in entry.workers {
                    if now.since(entry.since) >= worker.configuration.busyLimit {
                        if !entry.warned {
                            entry.warned = true
                            worker.logger.error("a handler has been busy past the worker's limit; heartbeats stop so the host can restart this process", metadata: [
                                "flowbus.service": "\(worker.service)", "flowbus.busyLimit": "\(worker.configuration.busyLimit)",
                            ])
                        }
                        continue
                    }
                    guard worker.socket != nil, worker.reconnectAt == nil, now >= worker.nextHeartbeat else { continue }
                    worker.send(worker.heartbeatFrames, now: now)
                }
                lent[id] = entry
            }
            _ = condition.wait(until: Date(timeIntervalSinceNow: 0.05))
        }
    }
}

extension MajordomoWorker {
    /// Runs `body` (a request's handler) while another thread keeps this worker's heartbeats
    /// going; `body` must not use the worker.
    public func whileBusy<T>(_ body: () throws -> T) rethrows -> T {
        try BusyHeartbeats.shared.whileBusy([self], body)
    }
}

extension MajordomoWorkerLanes {
    /// Runs `body` while another thread keeps every lane's heartbeats going.
    public func whileBusy<T>(_ body: () throws -> T) rethrows -> T {
        try BusyHeartbeats.shared.whileBusy(lanes, body)
    }
}
