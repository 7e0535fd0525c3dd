import Foundation
import MessagePath
import Testing
@testable import Clone

/// An idle agent and server sleep until something happens: they no longer wake every
/// `statisticsInterval` to publish counters that did not move, and counters that do move are
/// still published.
@Suite struct CloneIdleLoopTests {
    @Test func anIdleAgentAndServerSleepAndStillPublishWhatChanges() async throws {
        let fixture = try CloneFixture(hugz: .seconds(1))
        let agent = try fixture.agent(["/idle/"], timeout: .seconds(5))
        #expect(await agent.waitUntilSynced(timeout: .seconds(10)))
        let server = try #require(fixture.server)
        _ = try agent.set(key: "/idle/a", value: [1])
        #expect(await eventually { agent.statistics.updatesApplied == 1 })
        // Let the flushes that follow the write run, then watch both loops for half a second.
        try await Task.sleep(for: .milliseconds(200))
        let agentBefore = agent.shared.passes.load(ordering: .relaxed)
        let serverBefore = server.shared.passes.load(ordering: .relaxed)
        try await Task.sleep(for: .milliseconds(500))
        let agentPasses = agent.shared.passes.load(ordering: .relaxed) - agentBefore
        let serverPasses = server.shared.passes.load(ordering: .relaxed) - serverBefore
        // On a 5 ms flush timer each loop made about 100 passes in that time. Idle, each makes a
        // few: at most one HUGZ in the window and the one or two flushes that follow it.
        #expect(agentPasses <= 12, "the agent's loop made \(agentPasses) passes in 500 ms while idle")
        #expect(serverPasses <= 12, "the server's loop made \(serverPasses) passes in 500 ms while idle")

        // Woken by a write, both publish their new counters again.
        let sequenceBefore = server.statistics.sequence
        _ = try agent.set(key: "/idle/b", value: [2])
        #expect(await eventually { agent.statistics.updatesApplied == 2 })
        #expect(await eventually { server.statistics.sequence == sequenceBefore + 1 })
    }

    @Test func aFlushThatFindsNothingNewArmsNoTimer() {
        let now = MonotonicTime.now()
        let busy = StatisticsFlush.next(after: now, interval: .milliseconds(20), quiet: false)
        #expect(busy.at == now + .milliseconds(20) && !busy.idle)
        let quiet = StatisticsFlush.next(after: now, interval: .milliseconds(20), quiet: true)
        #expect(quiet.idle && quiet.at >= now + .seconds(60))
    }
}
