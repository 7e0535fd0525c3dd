@testable import Clone
import Foundation
import Testing

/// `CloneAgent.waitUntilSynced` waits without polling: the agent's thread resumes it as the last
/// snapshot completes, its timer at the deadline, `stop` at once. A waiter left behind by any of
/// them would hang to its timeout, which these tests set far beyond what they allow.
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
}
