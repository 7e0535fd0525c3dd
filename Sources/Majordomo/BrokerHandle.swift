import MessagePath
import Dispatch
import Foundation
import Synchronization

/// State the broker thread and its handle share; everything here is safe from any thread.
final class BrokerShared: Sendable {
    let stopping = Atomic<Bool>(false)
    let flushRequested = Atomic<Bool>(false)
    let flushGeneration = Atomic<Int>(0)
    let running = Atomic<Bool>(true)
    let wake: WakeSignal
    let exited = DispatchSemaphore(value: 0)
    let joined = Mutex<Bool>(false)
    let published = Mutex<(statistics: BrokerStatistics, workers: [WorkerInfo])>((BrokerStatistics(), []))

    init(wake: WakeSignal) {
        self.wake = wake
    }

    func publish(_ statistics: BrokerStatistics, _ workers: [WorkerInfo]) {
        published.withLock { $0 = (statistics, workers) }
        flushGeneration.add(1, ordering: .releasing)
    }

    /// Asks the broker thread to publish now and waits (at most `limit`) until it has.
    func refresh(limit: Duration = .milliseconds(250)) {
        guard running.load(ordering: .acquiring) else { return }
        let before = flushGeneration.load(ordering: .acquiring)
        flushRequested.store(true, ordering: .releasing)
        wake.wake()
        let deadline = ContinuousClock.now + limit
        while flushGeneration.load(ordering: .acquiring) == before,
              running.load(ordering: .acquiring), ContinuousClock.now < deadline {
            usleep(200)
        }
    }
}

/// A running broker: its endpoints, its counters, its workers, and the way to stop it.
public final class BrokerHandle: Sendable {
    /// The bound endpoints, wildcards resolved (`tcp://127.0.0.1:*` → `tcp://127.0.0.1:41234`).
    public let endpoints: [String]
    let shared: BrokerShared

    init(endpoints: [String], shared: BrokerShared) {
        self.endpoints = endpoints
        self.shared = shared
    }

    /// Counters as of now: asks the broker thread to publish and waits for it (a few ms).
    /// Do not call from inside `rejectionReply` (it runs on the broker thread and would wait for itself).
    public var statistics: BrokerStatistics {
        shared.refresh()
        return shared.published.withLock { $0.statistics }
    }

    /// The counters the broker last published (at most one `statisticsInterval` old); never waits.
    public var lastStatistics: BrokerStatistics {
        shared.published.withLock { $0.statistics }
    }

    /// The live workers, as of now.
    public var workers: [WorkerInfo] {
        shared.refresh()
        return shared.published.withLock { $0.workers }
    }

    /// The live workers the broker last published (at most one `statisticsInterval` old); never
    /// waits, and wakes nothing: for a reader that looks often, such as the host's heartbeat
    /// bridge four times a second.
    public var lastWorkers: [WorkerInfo] {
        shared.published.withLock { $0.workers }
    }

    /// Whether the broker thread is still serving.
    public var isRunning: Bool { shared.running.load(ordering: .acquiring) }

    /// Sends DISCONNECT to every worker, closes the socket and waits for the broker thread to end.
    public func stop() {
        shared.stopping.store(true, ordering: .releasing)
        shared.wake.wake()
        shared.joined.withLock { joined in
            guard !joined else { return }
            shared.exited.wait()
            joined = true
        }
    }

    deinit {
        stop()
    }
}
