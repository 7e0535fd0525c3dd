import Clone
import FlowProtocol
import Foundation
import MessagePath
import Synchronization

/// One value of the state map under a Flowbus key.
public struct StateEntry: Sendable, Equatable {
    public var key: CloneKey
    /// The value; empty when the change is a delete.
    public var value: [UInt8]

    public init(key: CloneKey, value: [UInt8]) {
        self.key = key
        self.value = value
    }

    public var isDelete: Bool { value.isEmpty }
}

/// What the runtimes need of the Clone map: the local copy of their subtrees, writes, and the
/// changes as they come. `CloneAgent` is the real one; `MemoryStateMap` keeps it in memory so that
/// a runtime's rules (idempotency, stale refusal, fencing, restore after a restart) are tested
/// without processes.
public protocol StateMap: AnyObject, Sendable {
    /// True once every subscribed subtree has its snapshot.
    var isSynced: Bool { get }
    /// Blocks the calling thread until `isSynced`, the timeout, or `stop()`; returns `isSynced`.
    /// Woken as the last snapshot completes, not by polling (`CloneAgent.waitUntilSynced`).
    func waitUntilSynced(timeout: Duration, until stop: () -> Bool) -> Bool
    /// Blocks the calling thread until `condition()` holds, looked at now and again each time
    /// `key` changes (not by polling), or the timeout passes or the map stops; returns whether it held.
    func wait(forChangesOf key: CloneKey, timeout: Duration, until condition: () -> Bool) -> Bool
    /// The value of `key`, nil when absent or deleted.
    func value(at key: CloneKey) -> [UInt8]?
    /// The live (non-empty) values under `subtree` whose keys are Flowbus keys, sorted by key.
    func entries(in subtree: CloneSubtree) -> [StateEntry]
    func set(_ key: CloneKey, value: [UInt8]) throws(CloneWriteError)
    /// `value` under each of `keys`, queued together (a Clone agent wakes its thread once for
    /// them all); none is written when one key is refused.
    func set(_ keys: [CloneKey], value: [UInt8]) throws(CloneWriteError)
    func delete(_ key: CloneKey) throws(CloneWriteError)
    /// The live values under `subtree` now, then every change after them, in order.
    func changes(in subtree: CloneSubtree) -> AsyncStream<StateEntry>
    /// The same as `changes(in:)`, handed to `receive` where the map takes them in (a Clone
    /// agent's thread), one at a time, with no task woken per change; until `stop()`. For taking
    /// note of changes cheaply, under a lock of one's own: `receive` must neither wait nor write
    /// to this map.
    func follow(_ subtree: CloneSubtree, _ receive: @escaping @Sendable (StateEntry) -> Void)
    /// Waits, at most `timeout`, until the writes made so far are safe in the server (confirmed
    /// by it); false when the time ran out. A runtime calls it before answering a request
    /// (`AnswerSettling`), so an answer the caller will not ask again for never outlives the
    /// writes it stands for.
    func settle(timeout: Duration) -> Bool
    /// `settle` without blocking: `body(true)` once the writes made so far are safe in the
    /// server, `body(false)` when `timeout` passes first; run on whichever thread learns it (at
    /// once on this one when they are safe already), one body at a time, in the order given.
    /// `body` must neither wait for another thread nor write to this map.
    func whenSettled(timeout: Duration, _ body: @escaping (Bool) -> Void)
    /// From now on this copy holds only the values of keys (as text) that `keep` accepts; the
    /// others still come as changes, but `value(at:)`, `entries(in:)` and a new stream's first
    /// values no longer show them (`CloneAgent.keepValues(where:)`).
    func keepValues(where keep: @escaping @Sendable (String) -> Bool)
    func stop()
}


extension StateMap {
    public func set(_ keys: [CloneKey], value: [UInt8]) throws(CloneWriteError) {
        for key in keys { try set(key, value: value) }
    }

    /// A map that cannot call back waits here, on the caller's thread.
    public func whenSettled(timeout: Duration, _ body: @escaping (Bool) -> Void) {
        body(settle(timeout: timeout))
    }
}

extension CloneAgent: StateMap {
    public func value(at key: CloneKey) -> [UInt8]? {
        guard let entry = get(key.text), !entry.value.isEmpty else { return nil }
        return entry.value
    }

    public func entries(in subtree: CloneSubtree) -> [StateEntry] {
        entries(prefix: subtree.text).compactMap { entry in
            guard !entry.value.isEmpty, let key = try? CloneKey(parsing: entry.key) else { return nil }
            return StateEntry(key: key, value: entry.value)
        }
    }

    public func set(_ key: CloneKey, value: [UInt8]) throws(CloneWriteError) {
        _ = try set(key: key.text, value: value)
    }

    public func set(_ keys: [CloneKey], value: [UInt8]) throws(CloneWriteError) {
        _ = try set(keys: keys.map(\.text), value: value)
    }

    public func delete(_ key: CloneKey) throws(CloneWriteError) {
        _ = try delete(key: key.text)
    }

    public func settle(timeout: Duration) -> Bool {
        settle(through: nil, timeout: timeout)
    }

    public func waitUntilSynced(timeout: Duration, until stop: () -> Bool) -> Bool {
        waitUntilSynced(timeout: timeout, until: stop, checkingStopEvery: .milliseconds(100))
    }

    public func wait(forChangesOf key: CloneKey, timeout: Duration, until condition: () -> Bool) -> Bool {
        let changes = WaitableMark()
        // Followed before the first look: a change made after it wakes the wait.
        let observation = observe(prefix: key.text, includeCurrent: false, { [text = key.text] update in
            if update.key == text { changes.advance() }
        }, finished: { changes.close() })
        defer { observation.cancel() }
        return Self.wait(for: changes, timeout: timeout, condition)
    }

    public func changes(in subtree: CloneSubtree) -> AsyncStream<StateEntry> {
        // Yielded from the agent's thread: no task in between to wake for each change.
        let (stream, continuation) = AsyncStream<StateEntry>.makeStream()
        let observation = observeEntries(subtree, { continuation.yield($0) }, finished: { continuation.finish() })
        continuation.onTermination = { _ in observation.cancel() }
        return stream
    }

    public func follow(_ subtree: CloneSubtree, _ receive: @escaping @Sendable (StateEntry) -> Void) {
        observeEntries(subtree, receive)
    }

    /// The values under `subtree` now, then every change, as `StateEntry`s (keys that are not
    /// Flowbus keys left out), on the agent's thread.
    @discardableResult
    private func observeEntries(
        _ subtree: CloneSubtree, _ receive: @escaping @Sendable (StateEntry) -> Void, finished: @escaping @Sendable () -> Void = {}
    ) -> CloneObservation {
        observe(prefix: subtree.text, includeCurrent: true, { update in
            guard let key = try? CloneKey(parsing: update.key) else { return }
            receive(StateEntry(key: key, value: update.isDelete ? [] : update.value))
        }, finished: finished)
    }
}

/// A state map in this process's memory: what one Clone server and its agents would hold, with
/// every write visible at once. For tests of runtimes: give each runtime its own `peer()` to play
/// several processes on one map; stop one and make a new runtime over another peer to play a
/// restart (the map keeps everything, as the Clone server does).
public final class MemoryStateMap: StateMap {
    struct Listener {
        var owner: ObjectIdentifier
        var subtree: CloneSubtree
        var receive: @Sendable (StateEntry) -> Void
        var finish: @Sendable () -> Void
    }

    final class Store: Sendable {
        struct Contents {
            var values: [CloneKey: [UInt8]] = [:]
            var listeners: [Int: Listener] = [:]
            var nextListener = 0
            var writes: [StateEntry] = []
        }

        let contents = Mutex(Contents())
        /// Held while changes are handed to listeners, so they arrive in the order written.
        /// Never yield under `contents`: cancelling a stream's task runs its onTermination (which
        /// takes `contents`) while the runtime holds that task's lock, and a yield needs that lock.
        let delivery = Mutex<Void>(())
    }

    private let store: Store
    private let stopped = Atomic<Bool>(false)
    /// This peer's `keepValues(where:)`: the map keeps every value, this peer sees only these.
    private let keeps = Mutex<(@Sendable (String) -> Bool)?>(nil)

    public convenience init() {
        self.init(store: Store())
    }

    private init(store: Store) {
        self.store = store
    }

    /// Another process's agent on the same map.
    public func peer() -> MemoryStateMap {
        MemoryStateMap(store: store)
    }

    public var isSynced: Bool { true }

    public func waitUntilSynced(timeout: Duration, until stop: () -> Bool) -> Bool { true }

    public func wait(forChangesOf key: CloneKey, timeout: Duration, until condition: () -> Bool) -> Bool {
        let changes = WaitableMark()
        // A listener of every key that counts this one's changes: run under `delivery`, on the
        // writer's thread, after the map holds the write.
        guard let id = listen(.everything, { entry in if entry.key == key { changes.advance() } }, finish: { changes.close() }) else {
            return condition()
        }
        defer { store.contents.withLock { _ = $0.listeners.removeValue(forKey: id) } }
        return Self.wait(for: changes, timeout: timeout, condition)
    }

    public func value(at key: CloneKey) -> [UInt8]? {
        guard sees(key) else { return nil }
        return store.contents.withLock { $0.values[key] }
    }

    public func entries(in subtree: CloneSubtree) -> [StateEntry] {
        store.contents.withLock { contents in
            contents.values.filter { subtree.contains($0.key) }.map { StateEntry(key: $0.key, value: $0.value) }
        }.filter { sees($0.key) }.sorted { $0.key.text < $1.key.text }
    }

    public func keepValues(where keep: @escaping @Sendable (String) -> Bool) {
        keeps.withLock { $0 = keep }
    }

    private func sees(_ key: CloneKey) -> Bool {
        keeps.withLock { $0 }?(key.text) ?? true
    }

    public func set(_ key: CloneKey, value: [UInt8]) throws(CloneWriteError) {
        try write(StateEntry(key: key, value: value))
    }

    public func delete(_ key: CloneKey) throws(CloneWriteError) {
        try write(StateEntry(key: key, value: []))
    }

    /// Every write is in the map at once; settled unless a test holds confirmations back.
    public func settle(timeout: Duration) -> Bool {
        !stopped.load(ordering: .acquiring) && !holdsConfirmations.load(ordering: .acquiring)
    }

    /// Tests: `settle` fails as for writes whose confirmation has not come in time.
    public let holdsConfirmations = Atomic<Bool>(false)

    /// Every write to the map in order, deletes included, by any peer.
    public var writes: [StateEntry] { store.contents.withLock { $0.writes } }

    /// Writes a value as a forger (or a test) would: straight into the map.
    public func inject(_ key: CloneKey, value: [UInt8]) {
        try? write(StateEntry(key: key, value: value), force: true)
    }

    func write(_ entry: StateEntry, force: Bool = false) throws(CloneWriteError) {
        if !force, stopped.load(ordering: .acquiring) { throw .stopped }
        store.delivery.withLock { _ in
            let listeners = store.contents.withLock { contents in
                if entry.isDelete { contents.values[entry.key] = nil } else { contents.values[entry.key] = entry.value }
                contents.writes.append(entry)
                return contents.listeners.values.filter { $0.subtree.contains(entry.key) }.map(\.receive)
            }
            for receive in listeners { receive(entry) }
        }
    }

    public func changes(in subtree: CloneSubtree) -> AsyncStream<StateEntry> {
        let (stream, continuation) = AsyncStream<StateEntry>.makeStream()
        // The stream has no reader yet: yielding the first values to it wakes no task.
        guard let id = listen(subtree, { continuation.yield($0) }, finish: { continuation.finish() }) else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [store] _ in
            store.contents.withLock { _ = $0.listeners.removeValue(forKey: id) }
        }
        return stream
    }

    /// Called in order on a queue of the listener's own, as an agent's thread would: never on the
    /// writer's thread, which may hold a lock of its own that `receive` takes.
    public func follow(_ subtree: CloneSubtree, _ receive: @escaping @Sendable (StateEntry) -> Void) {
        let queue = DispatchQueue(label: "flowbus.memory-map.follow")
        listen(subtree, { entry in queue.async { receive(entry) } }, finish: {})
    }

    /// Hands `receive` the values under `subtree` now, then every write there; nil when stopped.
    @discardableResult
    private func listen(_ subtree: CloneSubtree, _ receive: @escaping @Sendable (StateEntry) -> Void, finish: @escaping @Sendable () -> Void) -> Int? {
        guard !stopped.load(ordering: .acquiring) else { return nil }
        let owner = ObjectIdentifier(self)
        let keep = keeps.withLock { $0 }
        // Under `delivery`, so no write slips between the values handed first and the listener's
        // registration.
        return store.delivery.withLock { _ in
            let (id, current) = store.contents.withLock { contents in
                let current = contents.values.sorted(by: { $0.key.text < $1.key.text })
                    .filter { subtree.contains($0.key) && keep?($0.key.text) != false }
                    .map { StateEntry(key: $0.key, value: $0.value) }
                let id = contents.nextListener
                contents.nextListener += 1
                contents.listeners[id] = Listener(owner: owner, subtree: subtree, receive: receive, finish: finish)
                return (id, current)
            }
            for entry in current { receive(entry) }
            return id
        }
    }

    /// Stops this peer: its streams end and its writes fail; the map and other peers carry on.
    public func stop() {
        stopped.store(true, ordering: .releasing)
        let owner = ObjectIdentifier(self)
        let mine = store.contents.withLock { contents in
            let mine = contents.listeners.filter { $0.value.owner == owner }
            for id in mine.keys { contents.listeners[id] = nil }
            return mine.values
        }
        for listener in mine { listener.finish() }
    }
}

extension StateMap {
    /// Looks at `holds()` now and again after each change `changes` counts (outside its lock:
    /// `holds` may read the map), until it holds, `timeout` passes, or `changes` is closed.
    static func wait(for changes: WaitableMark, timeout: Duration, _ holds: () -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout.seconds)
        while true {
            // Read before the look: a change after it ends the next wait at once.
            let seen = changes.value
            if holds() { return true }
            // Timed out or closed: one last look.
            guard changes.wait(for: seen + 1, until: deadline) else { return holds() }
        }
    }
}
