import Synchronization

/// One follower of an agent's changes under a prefix: `CloneAgent.observe` hands each change to
/// its `receive` on the agent's thread, as the agent applies it, without a hop through a task.
/// The changes an observer was given first (the entries held when it began) go through it too,
/// on the thread that began it, and the agent's changes that came meanwhile wait behind them: a
/// follower sees every change once, in the agent's order, and never two at a time.
final class CloneObserver: Sendable {
    private struct Gate {
        /// False until the entries held at the start are handed over; the agent's changes wait in `backlog` till then.
        var primed = false
        var backlog: [CloneUpdate] = []
    }

    let prefix: [UInt8]
    private let receive: @Sendable (CloneUpdate) -> Void
    private let finished: @Sendable () -> Void
    private let gate = Mutex(Gate())
    /// Set without taking `gate`: a stream's consumer that stops while a change is being yielded
    /// to it cancels from its onTermination, under the lock that yield waits for.
    private let ended = Atomic<Bool>(false)

    init(prefix: [UInt8], receive: @escaping @Sendable (CloneUpdate) -> Void, finished: @escaping @Sendable () -> Void) {
        self.prefix = prefix
        self.receive = receive
        self.finished = finished
    }

    /// Hands over the entries held when the observer began, then what the agent sent meanwhile.
    func prime(with current: [CloneUpdate]) {
        gate.withLock { gate in
            guard !ended.load(ordering: .acquiring) else { return }
            for update in current { receive(update) }
            for update in gate.backlog { receive(update) }
            gate.backlog = []
            gate.primed = true
        }
    }

    /// The agent's changes (on its thread, its map unlocked).
    func deliver(_ updates: [CloneUpdate]) {
        gate.withLock { gate in
            guard !ended.load(ordering: .acquiring) else { return }
            guard gate.primed else {
                gate.backlog += updates
                return
            }
            for update in updates { receive(update) }
        }
    }

    /// No more changes; with `notify`, `finished` runs (the agent stopped), once. A change being
    /// handed over now may still arrive.
    func end(notify: Bool) {
        let first = !ended.exchange(true, ordering: .acquiringAndReleasing)
        if first && notify { finished() }
    }
}

/// An observation begun by `CloneAgent.observe`; `cancel()` ends it (changes already being handed
/// over finish first). It ends by itself when the agent stops.
public final class CloneObservation: Sendable {
    private let cancelling: @Sendable () -> Void

    init(cancel: @escaping @Sendable () -> Void) {
        cancelling = cancel
    }

    public func cancel() { cancelling() }
}
