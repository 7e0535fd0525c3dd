import Clone
import Foundation
import Synchronization
import Testing

/// What an observer was handed, and how: on which thread, and whether two calls ever overlapped.
private final class Seen: Sendable {
    struct Record {
        var update: CloneUpdate
        var thread: String
        var valueRead: String?
        /// Handed over after `observe` returned (not while it handed over what it held).
        var afterBegin: Bool
    }

    let records = Mutex<[Record]>([])
    let inside = Atomic<Int>(0)
    let overlaps = Atomic<Int>(0)
    let finished = Atomic<Int>(0)
    let begun = Atomic<Bool>(false)

    func note(_ update: CloneUpdate, valueRead: String? = nil) {
        if inside.add(1, ordering: .acquiringAndReleasing).newValue > 1 { overlaps.add(1, ordering: .relaxed) }
        let record = Record(update: update, thread: Thread.current.name ?? "", valueRead: valueRead, afterBegin: begun.load(ordering: .acquiring))
        records.withLock { $0.append(record) }
        // Long enough that a second call, were it made meanwhile, would be caught inside.
        Thread.sleep(forTimeInterval: 0.0002)
        inside.add(-1, ordering: .acquiringAndReleasing)
    }

    var all: [Record] { records.withLock { $0 } }
}

@Suite("Clone observers: changes handed over on the agent's thread")
struct CloneObserveTests {
    @Test("begun while a writer writes: the entries held first, then every later change once, in order, never two calls at a time")
    func anObserverBegunMidStreamSeesEachChangeOnceInOrder() async throws {
        let fixture = try CloneFixture()
        let writer = try await fixture.syncedAgent(["/o/"])
        let follower = try await fixture.syncedAgent(["/o/"])
        for index in 0..<50 { try writer.set(key: "/o/k\(index)", value: "v\(index)".bytes) }
        #expect(await eventually { follower.entries(prefix: "/o/").count == 50 })

        // The writer goes on while the observer begins: changes meet its first entries mid-way.
        let writing = Task.detached {
            for index in 50..<400 {
                try writer.set(key: "/o/k\(index)", value: "v\(index)".bytes)
                if index % 50 == 0 { try await Task.sleep(for: .milliseconds(1)) }
            }
        }
        try await Task.sleep(for: .milliseconds(2))
        let seen = Seen()
        let observation = follower.observe(prefix: "/o/") { update in
            seen.note(update, valueRead: follower.get(update.key)?.text)
        }
        seen.begun.store(true, ordering: .releasing)
        try await writing.value
        #expect(await eventually { seen.all.contains { $0.update.key == "/o/k399" } })
        observation.cancel()

        let records = seen.all
        let first = records.filter(\.update.fromSnapshot)
        let live = records.filter { !$0.update.fromSnapshot }
        // Every key once: from the first entries or as a change after them, never both.
        #expect(Set(records.map(\.update.key)).count == 400)
        #expect(records.count == 400)
        #expect(first.count >= 50)
        #expect(first.map(\.update.key) == first.map(\.update.key).sorted())
        #expect(live.map(\.update.sequence) == live.map(\.update.sequence).sorted())
        if let newestFirst = first.map(\.update.sequence).max(), let oldestLive = live.map(\.update.sequence).min() {
            #expect(oldestLive > newestFirst)
        }
        #expect(seen.overlaps.load(ordering: .relaxed) == 0)
        // Reading the agent from inside `receive` works (no call is made under its map's lock).
        #expect(records.allSatisfy { $0.valueRead != nil })
        // Live changes come on the agent's own thread, not on a task's. Those that came while
        // `observe` handed over what the map held waited behind it, on the caller's thread.
        let later = live.filter(\.afterBegin)
        #expect(later.allSatisfy { $0.thread == "fb-clone-agent" }, "threads: \(Set(later.map(\.thread)))")
        #expect(!later.isEmpty)
    }

    @Test("cancelled, it is handed nothing more; the agent stopping runs `finished` once; begun on a stopped agent, it finishes at once")
    func cancelAndStop() async throws {
        let fixture = try CloneFixture()
        let agent = try await fixture.syncedAgent(["/c/"])
        let cancelled = Seen()
        let kept = Seen()
        let observation = agent.observe(prefix: "/c/", includeCurrent: false, { cancelled.note($0) }, finished: { cancelled.finished.add(1, ordering: .relaxed) })
        agent.observe(prefix: "/c/", includeCurrent: false, { kept.note($0) }, finished: { kept.finished.add(1, ordering: .relaxed) })
        try agent.set(key: "/c/one", value: "1".bytes)
        #expect(await eventually { cancelled.all.count == 1 && kept.all.count == 1 })
        observation.cancel()
        try agent.set(key: "/c/two", value: "2".bytes)
        #expect(await eventually { kept.all.count == 2 })
        #expect(cancelled.all.map(\.update.key) == ["/c/one"])

        agent.stop()
        #expect(kept.finished.load(ordering: .relaxed) == 1)
        // A cancelled observation is not told the agent stopped.
        #expect(cancelled.finished.load(ordering: .relaxed) == 0)
        let late = Seen()
        agent.observe(prefix: "/c/", { late.note($0) }, finished: { late.finished.add(1, ordering: .relaxed) })
        #expect(late.finished.load(ordering: .relaxed) == 1)
        #expect(late.all.isEmpty)
    }
}
