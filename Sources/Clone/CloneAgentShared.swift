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
    struct Held {
        var value: [UInt8]
        var sequence: UInt64
        var uuid: UUID?
        /// `value` is packed (`ValueDeltas`), and the key waits to be packed (in the UUID's padding).
        var packed = false
        var queued = false
        var properties: CloneProperties
    }

    var store: [String: Held] = [:]
    var listeners: [Int: CloneObserver] = [:]
    var nextListenerID = 0
    /// Which keys' values the map holds (`CloneAgent.keepValues(where:)`); nil: all of them.
    var keeps: (@Sendable (String) -> Bool)?
    /// Values unchanged for `packAfter` are packed (`CloneAgentConfiguration.packValuesAfter`).
    var packAfter: Duration?
    var deltas = ValueDeltas()
    var packQueue = PackQueue<String>()
    /// Values held packed, the bytes they hold so, and the bytes they would hold whole.
    var packed = (values: 0, bytes: 0, valueBytes: 0)

    /// Applies changes in order; returns, for each observer, the changes whose key its prefix
    /// matches, for the caller to deliver once the lock is released.
    mutating func apply(_ updates: [CloneUpdate]) -> [(CloneObserver, [CloneUpdate])] {
        for update in updates {
            if update.isDelete || keeps?(update.key) == false {
                if let removed = store.removeValue(forKey: update.key) { forgetPacked(removed) }
            } else {
                var entry = Held(value: update.value, sequence: update.sequence, uuid: update.uuid, properties: Self.held(update.properties))
                // Queued to be packed once unchanged a while; a key already waiting keeps its place.
                let packable = packAfter != nil && update.value.count >= deltas.limits.smallestValue
                entry.queued = packable
                let replaced = store.updateValue(entry, forKey: update.key)
                if replaced?.queued == true {
                    if !packable { store[update.key]?.queued = true }
                } else if packable, let after = packAfter {
                    packQueue.push(update.key, sequence: update.sequence, due: .now() + after)
                }
                if let replaced { forgetPacked(replaced) }
            }
        }
        return listeners.values.compactMap { listener in
            let matching = updates.filter { $0.key.utf8.starts(with: listener.prefix) }
            return matching.isEmpty ? nil : (listener, matching)
        }
    }
}

extension AgentView {
    /// The entry of `key` as it came, unpacked if the map holds it packed.
    func entry(_ key: String) -> CloneEntry? {
        store[key].map { entry(key, $0) }
    }

    func entry(_ key: String, _ held: Held) -> CloneEntry {
        CloneEntry(key: key, value: value(of: held), sequence: held.sequence, uuid: held.uuid, properties: held.properties)
    }

    func value(of held: Held) -> [UInt8] {
        // Only this map packs, against references it never drops: a delta it cannot read is a
        // bug, and the key then reads as empty rather than trapping.
        held.packed ? deltas.unpack(held.value) ?? [] : held.value
    }

    mutating func forgetPacked(_ entry: Held) {
        guard entry.packed else { return }
        packed.values -= 1
        packed.bytes -= entry.value.count
        packed.valueBytes -= ValueDeltas.unpackedCount(entry.value)
    }

    /// Packs the values that have stayed unchanged long enough, at most `limit` keys (the map's
    /// lock is held meanwhile: readers wait a few microseconds a key at most).
    mutating func packDue(now: MonotonicTime, limit: Int = 32) {
        guard let after = packAfter else { return }
        var looked = 0
        while looked < limit, let item = packQueue.popDue(now: now) {
            looked += 1
            guard let index = store.index(forKey: item.key), store.values[index].queued else { continue }
            if store.values[index].sequence != item.sequence {
                packQueue.push(item.key, sequence: store.values[index].sequence, due: now + after)
                continue
            }
            store.values[index].queued = false
            guard !store.values[index].packed, let delta = deltas.pack(store.values[index].value, key: Array(item.key.utf8)) else { continue }
            packed.values += 1
            packed.bytes += delta.count
            packed.valueBytes += store.values[index].value.count
            store.values[index].value = delta
            store.values[index].packed = true
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
    enum Command: Sendable {
        case subscribe(String)
    }

    let wake: WakeSignal
    let stopping = Atomic<Bool>(false)
    let running = Atomic<Bool>(true)
    let synced = Atomic<Bool>(false)
    /// Passes of the loop so far (tests: an idle loop sleeps instead of waking on a timer).
    let passes = Atomic<Int>(0)
    let view = Mutex(AgentView())
    let statistics = Mutex(CloneAgentStatistics())
    /// The subtree and reason of the last snapshot the server refused (a closed host's rule).
    let refusal = Mutex<(subtree: String, reason: String)?>(nil)
    /// Writes from any thread, taken by the agent thread.
    /// Writes waiting for the agent's thread; `written` numbers them (`CloneProperties.writeSequenceName`).
    let outbox = Mutex<(open: Bool, frames: [[Frame]], held: Int, written: UInt64)>((true, [], 0, 0))
    let commands = Mutex<[Command]>([])
    let settled = SettledMark()
    private let exited = DispatchSemaphore(value: 0)
    private let joined = Mutex(false)

    init(wake: WakeSignal) {
        self.wake = wake
    }

    func finish() {
        running.store(false, ordering: .releasing)
        synced.store(false, ordering: .releasing)
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

/// How far an agent's writes are settled, for threads that wait on it (`CloneAgent.settle`).
final class SettledMark: @unchecked Sendable {
    private let condition = NSCondition()
    private var through: UInt64 = 0
    private var closed = false

    func advance(to mark: UInt64) {
        condition.lock()
        through = mark
        condition.broadcast()
        condition.unlock()
    }

    func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }

    /// Waits until `mark` is settled; false when the time ran out or the agent stopped first.
    func wait(for mark: UInt64, until deadline: Date) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while through < mark {
            if closed || !condition.wait(until: deadline) { return through >= mark }
        }
        return true
    }
}
