@testable import Clone
import FlowbusTesting
import Foundation
import Synchronization
import Testing

/// `CloneAgent.waitUntilSynced` waits without polling: the agent's thread resumes it as the last
/// snapshot completes, its timer at the deadline, `stop` at once. A waiter left behind by any of
/// them would hang to its timeout, which these tests set far beyond what they allow. The same
/// holds for the blocking wait a plugin's serving thread makes at start.
@Suite struct CloneSyncWaitTests {
    /// The fixture's server stopped, so an agent cannot sync until it is started again.
    static func fixtureWithoutServer() throws -> CloneFixture {
        let fixture = try CloneFixture()
        fixture.server?.stop()
        fixture.server = nil
        return fixture
    }

    @Test func waitsBegunBeforeTheServerStartsAreAllResumedByItsSnapshot() async throws {
        let fixture = try Self.fixtureWithoutServer()
        let agent = try fixture.agent(["/w/"], timeout: .seconds(30))
        let started = ContinuousClock.now
        let waits = (0..<8).map { _ in Task { await agent.waitUntilSynced(timeout: .seconds(60)) } }
        try await Task.sleep(for: .milliseconds(200))
        #expect(!agent.isSynced)
        try fixture.startServer()
        for wait in waits { #expect(await wait.value) }
        #expect(ContinuousClock.now - started < .seconds(20), "the waits were resumed by their timers, not by the snapshot")
        #expect(agent.shared.syncWaiters.withLock { $0.waiting.isEmpty })
    }

    @Test func aWaitEndsUnsyncedWhenTheAgentStops() async throws {
        let fixture = try Self.fixtureWithoutServer()
        let agent = try fixture.agent(["/w/"], timeout: .seconds(30))
        let started = ContinuousClock.now
        let wait = Task { await agent.waitUntilSynced(timeout: .seconds(60)) }
        try await Task.sleep(for: .milliseconds(100))
        agent.stop()
        #expect(await wait.value == false)
        #expect(ContinuousClock.now - started < .seconds(20), "the stopped agent's wait ran to its timeout")
        #expect(await agent.waitUntilSynced(timeout: .seconds(60)) == false)
    }

    @Test func aWaitEndsUnsyncedAtItsTimeoutAndLeavesNoWaiter() async throws {
        let fixture = try Self.fixtureWithoutServer()
        let agent = try fixture.agent(["/w/"], timeout: .seconds(30))
        #expect(await agent.waitUntilSynced(timeout: .milliseconds(300)) == false)
        #expect(agent.shared.syncWaiters.withLock { $0.waiting.isEmpty })
        // Synced later, a new wait returns at once.
        try fixture.startServer()
        #expect(await agent.waitUntilSynced(timeout: .seconds(20)))
    }

    @Test func blockedThreadsAreWokenByTheSnapshotNotByTheirStopChecks() async throws {
        let fixture = try Self.fixtureWithoutServer()
        let agent = try fixture.agent(["/w/"], timeout: .seconds(30))
        let started = ContinuousClock.now
        let looks = Looks()
        // The stop check comes once a minute: only the agent's thread can end these waits in time.
        let waits = (0..<4).map { _ in
            Task {
                try await onThread {
                    agent.waitUntilSynced(timeout: .seconds(60), until: { looks.count.add(1, ordering: .relaxed); return false },
                                          checkingStopEvery: .seconds(60))
                }
            }
        }
        try await Task.sleep(for: .milliseconds(200))
        #expect(!agent.isSynced)
        try fixture.startServer()
        for wait in waits { #expect(try await wait.value) }
        #expect(ContinuousClock.now - started < .seconds(20), "the blocked waits ran to their stop checks, not woken by the snapshot")
        // One look as each wait began, none after: nothing polled.
        #expect(looks.count.load(ordering: .relaxed) <= 4)
    }

    @Test func aBlockedWaitEndsWhenStopSaysSoOrTheAgentStops() async throws {
        let fixture = try Self.fixtureWithoutServer()
        let agent = try fixture.agent(["/w/"], timeout: .seconds(30))
        let stopping = Looks()
        let started = ContinuousClock.now
        let byStop = Task {
            try await onThread {
                agent.waitUntilSynced(timeout: .seconds(60), until: { stopping.count.load(ordering: .acquiring) > 0 },
                                      checkingStopEvery: .milliseconds(20))
            }
        }
        let byAgent = Task {
            try await onThread {
                agent.waitUntilSynced(timeout: .seconds(60), until: { false }, checkingStopEvery: .seconds(60))
            }
        }
        try await Task.sleep(for: .milliseconds(100))
        stopping.count.store(1, ordering: .releasing)
        #expect(try await byStop.value == false)
        agent.stop()
        #expect(try await byAgent.value == false)
        #expect(ContinuousClock.now - started < .seconds(20), "a wait ran to its timeout after stop")
        // Unsynced at its timeout.
        #expect(agent.waitUntilSynced(timeout: .milliseconds(50), until: { false }) == false)
    }
}

/// A counter the test and a waiting thread share.
private final class Looks: Sendable {
    let count = Atomic<Int>(0)
}
