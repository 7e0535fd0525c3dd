import MessagePath
import Dispatch
import Foundation
import Synchronization
import ZeroMQ

/// The agent's map and the observers that follow it (`CloneAgent.observe`, on which the update
/// streams are built). One lock for both, so a new observer's first entries and the updates that
/// follow them come in order.
struct AgentView {
    var store: [String: CloneEntry] = [:]
    var listeners: [Int: CloneObserver] = [:]
    var nextListenerID = 0
    /// Which keys' values the map holds (`CloneAgent.keepValues(where:)`); nil: all of them.
    var keeps: (@Sendable (String) -> Bool)?

    /// Applies changes in order; returns, for each observer, the changes whose key its prefix
    /// matches, for the caller to deliver once the lock is released.
    mutating func apply(_ updates: [CloneUpdate]) -> [(CloneObserver, [CloneUpdate])] {
        for update in updates {
            if update.isDelete || keeps?(update.key) == false {
                store.removeValue(forKey: update.key)
            } else {
                store[update.key] = CloneEntry(
                    key: update.key, value: update.value, sequence: update.sequence,
                    uuid: update.uuid, properties: Self.held(update.properties))
            }
        }
        return listeners.values.compactMap { listener in
            let matching = updates.filter { $0.key.utf8.starts(with: listener.prefix) }
            return matching.isEmpty ? nil : (listener, matching)
        }
    }
}

extension AgentView {
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
