import MessagePath
import Dispatch
import Foundation
import Synchronization
import ZeroMQ

/// The agent's map and the observers that follow it (`CloneAgent.observe`, on which the update
/// streams are built). One lock for both, so a new observer's first entries and the updates that
/// follow them come in order.
struct AgentView {
    /// An entry as the map holds it: its key is the table's (a `CloneEntry` would hold it twice),
    /// its value maybe packed.
    struct Held: PackableEntry {
        /// The value as it came, or packed (`ValueDeltas`): read it with `value(of:key:)`.
        var held: HeldBytes
        var sequence: UInt64
        var uuid: UUID?
        /// The key waits to be packed (in the UUID's padding).
        var queued = false
        var properties: CloneProperties

        init(value: [UInt8], sequence: UInt64, uuid: UUID?, properties: CloneProperties) {
            self.held = .whole(value)
            self.sequence = sequence
            self.uuid = uuid
            self.properties = properties
        }

        /// What `overwrite` did.
        enum Overwrite {
            /// Nothing: the value held is packed, or of another length.
            case refused
            /// Copied over; the key was waiting to be packed already, or will not be.
            case done
            /// Copied over, and the key is now marked as waiting: the caller queues it.
            case doneToQueue
        }

        /// Takes a change into this entry, its bytes copied over the value held when that is
        /// whole and as long. A value a reader still holds is copied first, as any shared array
        /// is: the reader keeps what it read. With `queue`, a key not waiting to be packed is
        /// marked as waiting (`PackedValues.store`'s rule: a key already waiting keeps its place).
        mutating func overwrite(
            with bytes: UnsafeRawBufferPointer, sequence: UInt64, uuid: UUID?, properties: CloneProperties, queue: Bool
        ) -> Overwrite {
            guard case .whole(var value) = held, value.count == bytes.count else { return .refused }
            // The entry lets go of the array for the copy, so that `value` is its only holder.
            held = .whole([])
            value.withUnsafeMutableBytes { $0.copyMemory(from: bytes) }
            held = .whole(value)
            self.sequence = sequence
            self.uuid = uuid
            if !(properties.isEmpty && self.properties.isEmpty) { self.properties = properties }
            guard queue, !queued else { return .done }
            queued = true
            return .doneToQueue
        }
    }

    var store: [AgentKey: Held] = [:]
    var listeners: [Int: CloneObserver] = [:]
    var nextListenerID = 0
    /// Which keys' values the map holds (`CloneAgent.keepValues(where:)`); nil: all of them.
    var keeps: (@Sendable (String) -> Bool)?
    /// Values unchanged for `packAfter` are packed (`CloneAgentConfiguration.packValuesAfter`).
    var packAfter: Duration?
    var deltas = ValueDeltas()
    var packedValues = PackedValues<AgentKey>()

    /// Applies changes in order; returns, for each observer, the changes whose key its prefix
    /// matches, for the caller to deliver once the lock is released.
    mutating func apply(_ updates: [CloneUpdate]) -> [(CloneObserver, [CloneUpdate])] {
        let smallest = deltas.limits.smallestValue
        // Each change is read where the array holds it, not copied out whole.
        for index in updates.indices {
            if updates[index].isDelete || keeps?(updates[index].key) == false {
                packedValues.removeValue(forKey: AgentKey(updates[index].key), in: &store)
            } else {
                packedValues.store(
                    Held(value: updates[index].value, sequence: updates[index].sequence, uuid: updates[index].uuid,
                         properties: Self.held(updates[index].properties)),
                    under: AgentKey(updates[index].key), in: &store, after: packAfter, smallest: smallest)
            }
        }
        guard !listeners.isEmpty else { return [] }
        return listeners.values.compactMap { listener in
            let matching = updates.filter { $0.key.utf8.starts(with: listener.prefix) }
            return matching.isEmpty ? nil : (listener, matching)
        }
    }
}

extension AgentView {
    /// A live change applied where its value lies (`CloneAgentLoop`'s common way): the same as
    /// `apply` with that change, without making it. False, with nothing done, when the map has
    /// observers or keeps only some keys: they take the change made (`apply`).
    mutating func applyInPlace(
        key: AgentKey, value: UnsafeRawBufferPointer, sequence: UInt64, uuid: UUID?, properties: CloneProperties
    ) -> Bool {
        guard listeners.isEmpty, keeps == nil else { return false }
        guard !value.isEmpty else {
            packedValues.removeValue(forKey: key, in: &store)
            return true
        }
        let smallest = deltas.limits.smallestValue
        let kept = properties.isEmpty ? properties : Self.held(properties)
        let slot = store.index(forKey: key)
        if let slot {
            let packable = packAfter != nil && value.count >= smallest
            switch store.values[slot].overwrite(with: value, sequence: sequence, uuid: uuid, properties: kept, queue: packable) {
            case .done:
                return true
            case .doneToQueue:
                packedValues.push(key, sequence: sequence, due: .now() + packAfter!)
                return true
            case .refused:
                break
            }
        }
        packedValues.store(Held(value: Array(value), sequence: sequence, uuid: uuid, properties: kept),
                           under: key, at: slot, in: &store, after: packAfter, smallest: smallest)
        return true
    }

    /// The entry of `key` as it came, unpacked if the map holds it packed.
    func entry(_ key: String) -> CloneEntry? {
        store[AgentKey(key)].map { entry(key, $0) }
    }

    func entry(_ key: String, _ held: Held) -> CloneEntry {
        CloneEntry(key: key, value: value(of: held, key: key), sequence: held.sequence, uuid: held.uuid, properties: held.properties)
    }

    func value(of held: Held, key: String) -> [UInt8] {
        // Only this map packs, against references it never drops: a delta it cannot read is a
        // bug, and the key then reads as empty rather than trapping.
        switch held.held {
        case .whole(let value): value
        case .packed: packedValues.value(of: held, key: Array(key.utf8), deltas: deltas) ?? []
        }
    }

    /// Packs the values that have stayed unchanged long enough, at most `limit` keys (the map's
    /// lock is held meanwhile: readers wait a few microseconds a key at most).
    mutating func packDue(now: MonotonicTime, limit: Int = 32) {
        guard let after = packAfter else { return }
        // The table is moved out while the queue packs into the map, and back (no copy).
        var deltas = ValueDeltas(limits: self.deltas.limits)
        swap(&deltas, &self.deltas)
        defer { swap(&deltas, &self.deltas) }
        packedValues.packDue(in: &store, now: now, after: after, limit: limit) { value, key in
            deltas.pack(value, key: Array(key.text.utf8))
        }
    }

    /// The properties an entry keeps: the server's session chain (`sprev`) mattered only on the
    /// way in, and without it most entries keep none (no array held per key).
    static func held(_ properties: CloneProperties) -> CloneProperties {
        guard properties.contains(where: { $0.name == CloneProperties.sessionPreviousName }) else { return properties }
        let kept = properties.filter { $0.name != CloneProperties.sessionPreviousName }
        return kept.isEmpty ? [] : CloneProperties(kept)
    }
}

/// What the agent thread and its handle share; safe from any thread.
final class CloneAgentShared: Sendable {
    /// The agent's thread holds `gate` at every moment but while it sleeps in its poll
    /// (`ZMQPoller.gate`), and `loop` is set while it runs: a thread that queued writes and takes
    /// the gate meanwhile sends them itself (`CloneAgentLoop.sendForWriter`), rather than wake the
    /// agent's thread to send them, a hand-off between threads on the way of every state a view
    /// model publishes. `loop` is read and set only with the gate held.
    final class WriterShortcut: @unchecked Sendable {
        let gate = WaitGate()
        var loop: CloneAgentLoop?
    }

    enum Command: Sendable {
        case subscribe(String)
    }

    let wake: WakeSignal
    let stopping = Atomic<Bool>(false)
    let running = Atomic<Bool>(true)
    let synced = Atomic<Bool>(false)
    /// Tasks waiting for `synced` (`CloneAgent.waitUntilSynced`), by their number: resumed by
    /// the agent's thread once it is synced, by their timer, or when the agent ends.
    let syncWaiters = Mutex<(next: Int, waiting: [Int: CheckedContinuation<Void, Never>])>((0, [:]))
    /// Passes of the loop so far (tests: an idle loop sleeps instead of waking on a timer).
    let passes = Atomic<Int>(0)
    let view = Mutex(AgentView())
    let statistics = Mutex(CloneAgentStatistics())
    /// The subtree and reason of the last snapshot the server refused (a closed host's rule).
    let refusal = Mutex<(subtree: String, reason: String)?>(nil)
    /// Writes from any thread waiting for the agent's thread; `written` numbers them
    /// (`CloneProperties.writeSequenceName`), `held` counts those the thread holds unsent.
    let outbox = Mutex<(open: Bool, writes: [PreparedWrite], held: Int, written: UInt64)>((true, [], 0, 0))
    let commands = Mutex<[Command]>([])
    /// How far this agent's writes are settled, for threads that wait on it (`CloneAgent.settle`).
    let settled = WaitableMark()
    /// How a thread that queues writes sends them itself while the agent's thread sleeps.
    let shortcut = WriterShortcut()
    private let exited = DispatchSemaphore(value: 0)
    private let joined = Mutex(false)

    init(wake: WakeSignal) {
        self.wake = wake
    }

    /// Resumes the tasks waiting for `synced` (each once: it leaves the table as it is resumed),
    /// and wakes the threads blocked on it.
    func resumeSyncWaiters() {
        let waiting = syncWaiters.withLock { waiters in
            defer { waiters.waiting = [:] }
            return waiters.waiting
        }
        for continuation in waiting.values { continuation.resume() }
        syncedCondition.lock()
        syncedCondition.broadcast()
        syncedCondition.unlock()
    }

    /// Threads blocked until `synced` (`CloneAgent.waitUntilSynced(timeout:until:checkingStopEvery:)`).
    private let syncedCondition = NSCondition()

    /// Blocks the calling thread until `synced`, the deadline, the agent's end, or `stop()` (looked
    /// at every `stopEvery`); returns whether it is synced. Woken by `resumeSyncWaiters`.
    func blockUntilSynced(deadline: ContinuousClock.Instant, stop: () -> Bool, stopEvery: Duration) -> Bool {
        syncedCondition.lock()
        defer { syncedCondition.unlock() }
        // Looked at under the lock `resumeSyncWaiters` broadcasts under: stored before this looks,
        // it is seen here; after, its broadcast finds this thread waiting.
        while !synced.load(ordering: .acquiring) {
            let now = ContinuousClock.now
            guard now < deadline, running.load(ordering: .acquiring), !stop() else { return synced.load(ordering: .acquiring) }
            let slice = min(deadline - now, stopEvery)
            _ = syncedCondition.wait(until: Date(timeIntervalSinceNow: slice.seconds))
        }
        return true
    }

    /// Resumes waiter `id` if it still waits (its timer ran out first).
    func resumeSyncWaiter(_ id: Int) {
        syncWaiters.withLock { $0.waiting.removeValue(forKey: id) }?.resume()
    }

    func finish() {
        running.store(false, ordering: .releasing)
        synced.store(false, ordering: .releasing)
        resumeSyncWaiters()
        outbox.withLock { $0.open = false }
        settled.close()
        // Ended outside the lock: a stream's onTermination takes the same lock to remove its observer.
        let listeners = view.withLock { view in
            defer { view.listeners.removeAll() }
            return Array(view.listeners.values)
        }
        for listener in listeners { listener.end(notify: true) }
        exited.signal()
    }

    func stopAndWait() {
        stopping.store(true, ordering: .releasing)
        wake.wake()
        joined.withLock { joined in
            guard !joined else { return }
            exited.wait()
            joined = true
        }
    }
}
