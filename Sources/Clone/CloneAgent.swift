import MessagePath
import Dispatch
import Foundation
import Logging
import Synchronization
import ZeroMQ

/// The 12/CHP client agent: mirrors subtrees of a clone server's map on its own thread and
/// writes changes to it. Safe to use from any thread or task.
public final class CloneAgent: Sendable {
    public let endpoints: CloneEndpoints
    let shared: CloneAgentShared
    let maxValueBytes: Int
    let maxHeldWrites: Int
    /// `CloneAgentConfiguration.writersSend`.
    let writersSend: Bool
    let writeIDs = WriteIDs()
    /// `ack=<agent>`, added to every KVSET when writes are confirmed.
    let confirmation: (name: String, value: String)?
    /// `wgen=<writer>:<incarnation>`, added to every KVSET when the configuration names them.
    let generation: String?
    /// The lines above and `wseq`'s name and agent, as the bytes every KVSET carries.
    let ownLines: OwnLines

    /// Connects to the server's three endpoints on a new thread and starts the first snapshots.
    public init(
        context: ZMQContext,
        endpoints: CloneEndpoints,
        configuration: CloneAgentConfiguration = .init(),
        logger: Logger
    ) throws(CloneStartError) {
        try configuration.validate()
        self.endpoints = endpoints
        self.maxValueBytes = configuration.maxValueBytes
        self.maxHeldWrites = configuration.maxHeldWrites
        self.writersSend = configuration.writersSend
        let ackID = configuration.confirmWrites ? writeIDs.agentID : nil
        self.confirmation = ackID.map { (CloneProperties.ackName, $0) }
        self.generation = configuration.generation.map { "\($0.writer):\($0.number)" }
        self.ownLines = OwnLines(agentID: writeIDs.agentID, confirmation: confirmation, generation: generation)
        let wake: WakeSignal
        do { wake = try WakeSignal() } catch { throw .system(error.description) }
        let shared = CloneAgentShared(wake: wake)
        let ownLines = self.ownLines
        self.shared = shared
        let started = Mutex<Result<Void, CloneStartError>?>(nil)
        let ready = DispatchSemaphore(value: 0)
        let thread = Thread {
            ThreadName.set("fb-clone-agent")
            do {
                let loop = try CloneAgentLoop(
                    context: context, endpoints: endpoints, configuration: configuration, shared: shared, ackID: ackID, ownLines: ownLines, logger: logger)
                started.withLock { $0 = .success(()) }
                ready.signal()
                loop.run()
            } catch let error as CloneStartError {
                started.withLock { $0 = .failure(error) }
                ready.signal()
            } catch {
                started.withLock { $0 = .failure(.system("\(error)")) }
                ready.signal()
            }
            shared.finish()
        }
        thread.name = "flowbus-clone-agent"
        thread.start()
        ready.wait()
        if case .failure(let error) = started.withLock({ $0 }) { throw error }
    }

    // MARK: Reading

    /// The entry of `key`, if this agent's subtrees hold it.
    public func get(_ key: String) -> CloneEntry? {
        shared.view.withLock { $0.entry(key) }
    }

    /// From now on the map holds only the values of keys `keep` accepts; it lets go of the others
    /// now. Their changes still reach `updates` streams as they come, but `get` and `entries` no
    /// longer see them, and a stream's `includeCurrent` starts without them. For a process that
    /// follows a whole subtree to react to its changes (and read it whole once, at start) but
    /// needs only some of its values afterwards.
    public func keepValues(where keep: @escaping @Sendable (String) -> Bool) {
        shared.view.withLock { view in
            view.keeps = keep
            for key in view.store.keys.filter({ !keep($0.text) }) {
                view.packedValues.removeValue(forKey: key, in: &view.store)
            }
        }
    }

    /// Values the map holds packed (`CloneAgentConfiguration.packValuesAfter`), the bytes they
    /// hold so, and the bytes they would hold whole.
    public var packing: (values: Int, bytes: Int, valueBytes: Int) {
        shared.view.withLock { ($0.packedValues.tally.values, $0.packedValues.tally.bytes, $0.packedValues.tally.valueBytes) }
    }

    /// The entries whose key starts with `prefix`, sorted by key.
    public func entries(prefix: String = "") -> [CloneEntry] {
        let prefixBytes = Array(prefix.utf8)
        return shared.view.withLock { view in
            view.store.compactMap { key, held in key.text.utf8.starts(with: prefixBytes) ? view.entry(key.text, held) : nil }
        }.sorted { $0.key < $1.key }
    }

    /// Every change under `prefix`, in order, as soon as the agent applies it. With `includeCurrent`
    /// the stream starts with the entries held now (as `fromSnapshot` updates), so a consumer never
    /// misses the state between reading and following. Each call makes an independent stream; it
    /// ends when the agent stops or the consumer stops iterating.
    public func updates(
        prefix: String = "",
        includeCurrent: Bool = true,
        bufferingPolicy: AsyncStream<CloneUpdate>.Continuation.BufferingPolicy = .unbounded
    ) -> AsyncStream<CloneUpdate> {
        let (stream, continuation) = AsyncStream<CloneUpdate>.makeStream(bufferingPolicy: bufferingPolicy)
        let observation = observe(prefix: prefix, includeCurrent: includeCurrent, { continuation.yield($0) }, finished: { continuation.finish() })
        continuation.onTermination = { _ in observation.cancel() }
        return stream
    }

    /// Calls `receive` with every change under `prefix`, in order, as soon as the agent applies it:
    /// on the agent's thread, with no task between (a stream from `updates` costs a wake-up of a
    /// task per change). With `includeCurrent` it is first called, on this thread and before this
    /// returns, with the entries held now (as `fromSnapshot` updates); changes the agent applies
    /// meanwhile wait behind them. Calls never overlap, and none is made under the agent's map
    /// lock, so `receive` may read the agent (`get`, `entries`).
    ///
    /// `receive` holds up the agent, which reads the server on the same thread: it is for taking
    /// note of a change (into a table under a lock, or a stream of one's own), never for waiting.
    /// `finished` runs once, when the agent stops. Cancel the observation to stop it sooner; when
    /// the agent has stopped already, `finished` runs before this returns.
    @discardableResult
    public func observe(
        prefix: String = "", includeCurrent: Bool = true,
        _ receive: @escaping @Sendable (CloneUpdate) -> Void, finished: @escaping @Sendable () -> Void = {}
    ) -> CloneObservation {
        let prefixBytes = Array(prefix.utf8)
        let observer = CloneObserver(prefix: prefixBytes, receive: receive, finished: finished)
        let registered: (id: Int, current: [CloneUpdate])? = shared.view.withLock { view in
            guard shared.running.load(ordering: .acquiring) else { return nil }
            var current: [CloneUpdate] = []
            if includeCurrent {
                for (key, held) in view.store.sorted(by: { $0.key < $1.key }) where key.text.utf8.starts(with: prefixBytes) {
                    let entry = view.entry(key.text, held)
                    current.append(CloneUpdate(
                        key: entry.key, value: entry.value, sequence: entry.sequence, properties: entry.properties,
                        uuid: entry.uuid, isDelete: false, fromSnapshot: true))
                }
            }
            let id = view.nextListenerID
            view.nextListenerID += 1
            view.listeners[id] = observer
            return (id, current)
        }
        guard let registered else {
            observer.end(notify: true)
            return CloneObservation(cancel: {})
        }
        observer.prime(with: registered.current)
        return CloneObservation(cancel: { [shared] in
            observer.end(notify: false)
            shared.view.withLock { _ = $0.listeners.removeValue(forKey: registered.id) }
        })
    }

    /// True when every subtree has its snapshot and the server is heard from.
    public var isSynced: Bool { shared.synced.load(ordering: .acquiring) }

    /// The subtree and the server's reason, when the server refused a snapshot this agent asked
    /// for (a closed host lets a client read only what it holds a capability for): the agent
    /// counts it synced, with nothing under that subtree.
    public var refusal: (subtree: String, reason: String)? { shared.refusal.withLock { $0 } }

    /// Waits until `isSynced` (or the timeout passes, or the agent stops); returns whether it is
    /// synced. The agent's thread resumes the wait as the last snapshot completes: nothing polls.
    public func waitUntilSynced(timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !isSynced {
            guard ContinuousClock.now < deadline, shared.running.load(ordering: .acquiring) else { return false }
            let shared = shared
            let id = shared.syncWaiters.withLock { waiters in
                defer { waiters.next += 1 }
                return waiters.next
            }
            let timer = Task {
                try? await Task.sleep(until: deadline, clock: .continuous)
                shared.resumeSyncWaiter(id)
            }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                // Looked at under the lock the agent's thread and the timer take to resume:
                // synced, ended or past the deadline before this registers, it is seen here;
                // after, the thread or the timer finds this waiter.
                let waits = shared.syncWaiters.withLock { waiters in
                    guard !shared.synced.load(ordering: .acquiring), shared.running.load(ordering: .acquiring),
                          ContinuousClock.now < deadline else { return false }
                    waiters.waiting[id] = continuation
                    return true
                }
                if !waits { continuation.resume() }
            }
            timer.cancel()
        }
        return true
    }

    /// The same for a thread of one's own (a plugin's serving thread): blocks until `isSynced`,
    /// the timeout, the agent's end, or `stop()`, which is looked at every `stopEvery`. The
    /// agent's thread wakes it as the last snapshot completes: nothing polls for the snapshot.
    public func waitUntilSynced(
        timeout: Duration, until stop: () -> Bool, checkingStopEvery stopEvery: Duration = .milliseconds(100)
    ) -> Bool {
        shared.blockUntilSynced(deadline: ContinuousClock.now + timeout, stop: stop, stopEvery: stopEvery)
    }

    /// Adds a subtree to mirror (empty is everything); the agent asks for its snapshot at once.
    public func subscribe(_ subtree: String) throws(CloneDecodeError) {
        try CloneKeyRules.validate(subtree: subtree)
        shared.commands.withLock { $0.append(.subscribe(subtree)) }
        shared.synced.store(false, ordering: .releasing)
        shared.wake.wake()
    }

    /// Counters as the agent thread last published them (at most `statisticsInterval` old).
    public var statistics: CloneAgentStatistics {
        shared.statistics.withLock { $0 }
    }

    /// Stops the thread, closes the sockets and ends every update stream.
    public func stop() {
        shared.stopAndWait()
    }

    deinit {
        stop()
    }
}
