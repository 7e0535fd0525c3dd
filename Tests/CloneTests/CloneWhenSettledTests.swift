import Clone
import FlowbusTesting
import Foundation
import MessagePath
import Synchronization
import Testing
import ZeroMQ

/// `CloneAgent.whenSettled` (and `WaitableMark.whenReached` under it): a body runs once the
/// writes made before it are confirmed, on the thread that learns it, with no thread waiting —
/// how a runtime's answer leaves from the Clone agent's thread instead of waking its lane.
@Suite("Bodies run when writes settle")
struct CloneWhenSettledTests {
    /// What the bodies saw, in the order they ran.
    final class Runs: @unchecked Sendable {
        private let lock = NSLock()
        private var runs: [(name: String, reached: Bool, thread: pthread_t)] = []

        func body(_ name: String) -> (Bool) -> Void {
            { reached in self.lock.withLock { self.runs.append((name, reached, pthread_self())) } }
        }

        var seen: [String] { lock.withLock { runs.map { "\($0.name):\($0.reached)" } } }
        var threads: [pthread_t] { lock.withLock { runs.map(\.thread) } }
    }

    @Test func aMarkRunsItsBodiesInTheOrderGivenOnceTheirMarkComes() {
        let mark = WaitableMark()
        let runs = Runs()
        let now = MonotonicTime.now()
        let far = now + .seconds(60)
        // Reached already, nothing before it: runs at once, on this thread.
        #expect(mark.whenReached(0, deadline: far, runs.body("zero")) == false)
        #expect(runs.seen == ["zero:true"])
        mark.whenReached(3, deadline: far, runs.body("three"))
        // Given after "three", so it waits for it, though its own mark is lower.
        mark.whenReached(1, deadline: far, runs.body("one"))
        mark.whenReached(5, deadline: now + .seconds(1), runs.body("five"))
        #expect(mark.waiting == 3)
        mark.advance(to: 2)
        #expect(runs.seen == ["zero:true"], "ran before its mark, or out of order")
        mark.advance(to: 3)
        #expect(runs.seen == ["zero:true", "three:true", "one:true"])
        // The thread that expires waiters learns of the earliest deadline, and hears of a sooner one.
        #expect(mark.plan(wake: now + .seconds(30)) == now + .seconds(1))
        #expect(mark.whenReached(9, deadline: now + .milliseconds(500), runs.body("nine")), "due before the planned wake: that thread must be woken")
        #expect(mark.whenReached(9, deadline: now + .seconds(20), runs.body("later")) == false)
        // "five"'s deadline passes: it, and only it, runs with false.
        mark.expire(now: now + .milliseconds(700))
        #expect(runs.seen == ["zero:true", "three:true", "one:true", "nine:false"])
        mark.expire(now: now + .seconds(2))
        #expect(runs.seen.suffix(1) == ["five:false"])
        // Closed: what waits runs with false, and so does anything given after.
        mark.close()
        mark.whenReached(0, deadline: far, runs.body("after"))
        #expect(runs.seen.suffix(2) == ["later:false", "after:false"])
        #expect(mark.waiting == 0)
    }

    /// A write held back by the server's fault seam: the body waits, with no thread blocked for
    /// it; once the write gets through (sent again after `confirmAfter`) the body runs with true,
    /// on the agent's thread, not the one that gave it.
    @Test func anAnswerRunsOnTheAgentsThreadOnceItsWriteIsConfirmed() async throws {
        let fixture = try CloneFixture()
        let writer = try await fixture.syncedAgent(["/other/"]) { configuration in
            configuration.confirmWrites = true
            configuration.confirmAfter = .milliseconds(100)
        }
        let runs = Runs()
        // Nothing written yet: at once, on this thread.
        writer.whenSettled(timeout: .seconds(10), runs.body("nothing"))
        #expect(runs.seen == ["nothing:true"])
        try fixture.faults.install(FaultRule(id: "hold", scope: .key, prefix: "/held/", action: .drop))
        try writer.set(key: "/held/k", value: "v".bytes)
        writer.whenSettled(timeout: .seconds(30), runs.body("held"))
        try writer.set(key: "/free/k", value: "w".bytes)
        // Given after, it waits for the held write as well as its own.
        writer.whenSettled(timeout: .seconds(30), runs.body("behind"))
        try await Task.sleep(for: .milliseconds(400))
        #expect(runs.seen == ["nothing:true"], "a body ran while its write was being dropped")
        #expect(writer.statistics.writesResent > 0)
        fixture.faults.removeAll()
        #expect(await eventually { runs.seen.count == 3 })
        #expect(runs.seen == ["nothing:true", "held:true", "behind:true"])
        let threads = runs.threads
        #expect(pthread_equal(threads[1], threads[0]) == 0, "ran on the thread that gave it, which would have had to wait")
        #expect(await eventually { writer.statistics.writesConfirmed == 2 }, "\(writer.statistics)")
    }

    /// A write never confirmed in time: the body runs with false at its deadline, from the
    /// agent's thread, though nothing else wakes it; a stopped agent runs what waits with false.
    @Test func anAnswerWhoseWriteIsNotConfirmedInTimeRunsWithFalse() async throws {
        let fixture = try CloneFixture()
        let writer = try await fixture.syncedAgent(["/other/"]) { configuration in
            configuration.confirmWrites = true
            // Sent again only after the deadline: the agent must wake for the deadline itself.
            configuration.confirmAfter = .seconds(20)
        }
        let runs = Runs()
        try fixture.faults.install(FaultRule(id: "lose", scope: .key, prefix: "/lost/", action: .drop))
        try writer.set(key: "/lost/k", value: "v".bytes)
        let started = ContinuousClock.now
        writer.whenSettled(timeout: .milliseconds(300), runs.body("late"))
        writer.whenSettled(timeout: .seconds(30), runs.body("pending"))
        #expect(await eventually { runs.seen == ["late:false"] })
        let waited = ContinuousClock.now - started
        #expect(waited >= .milliseconds(290) && waited < .seconds(10), "\(waited)")
        writer.stop()
        #expect(await eventually { runs.seen == ["late:false", "pending:false"] })
    }
}
