import Clone
import Foundation
import Testing
import ZeroMQ

/// The agent against servers that talk as the zguide's clonesrv5 and clonesrv6 do: UUIDs and
/// properties in frames 2–3 of KVSYNC, KTHXBAI and HUGZ, an empty KTHXBAI subtree, no HUGZ at all.
@Suite("Clone agent against zguide-style servers")
struct CloneZguideServerTests {
    static func agent(
        _ context: ZMQContext, _ server: ZguideStyleServer, probeWait: Duration, timeout: Duration = .milliseconds(400)
    ) throws -> CloneAgent {
        var configuration = CloneAgentConfiguration(subtrees: ["/z/"])
        configuration.serverTimeout = timeout
        configuration.probeWait = probeWait
        configuration.statisticsInterval = .milliseconds(5)
        return try CloneAgent(context: context, endpoints: server.endpoints, configuration: configuration, logger: testLogger)
    }

    @Test("syncs from a clonesrv5, which sends no HUGZ, applies its updates and counts what it tolerated",
          arguments: ZguideStyleServer.Dialect.allCases)
    func clonesrv5(dialect: ZguideStyleServer.Dialect) async throws {
        let context = try ZMQContext()
        let server = try ZguideStyleServer(context: context, dialect: dialect, seed: [("/z/a", "1"), ("/z/b", "2"), ("/y/other", "3")])
        defer { server.stop() }
        let agent = try Self.agent(context, server, probeWait: .milliseconds(100))
        defer { agent.stop() }

        #expect(await agent.waitUntilSynced(timeout: .seconds(10)))
        #expect(agent.textMap() == ["/z/a": "1", "/z/b": "2"])
        #expect(await eventually { agent.statistics.snapshotsCompleted == 1 })
        var statistics = agent.statistics
        #expect(statistics.tolerated(.kvsyncFrames) == 2)
        #expect(statistics.tolerated(.kthxbaiWithoutSubtree) == (dialect == .c ? 1 : 0))
        #expect(statistics.tolerated(.kthxbaiFrames) == (dialect == .python ? 1 : 0))
        #expect(statistics.unprovenSnapshots == 1)
        #expect(statistics.hugzReceived == 0)
        #expect(statistics.badInput.isEmpty)

        // Sequence 4, right after the snapshot's 3: the first message proves nothing was missed.
        server.send(.publish(key: "/z/c", value: "3"))
        #expect(await eventually { agent.text("/z/c") == "3" })
        #expect(await eventually { agent.statistics.unprovenSnapshotsConfirmed == 1 })
        statistics = agent.statistics
        #expect(statistics.unprovenSnapshotsRetaken == 0)
        #expect(statistics.snapshotsCompleted == 1)
        #expect(server.snapshotsServed.load(ordering: .relaxed) == 1)

        // Silence from a server that never sent HUGZ is not a loss: wait out two server timeouts.
        try await Task.sleep(for: .seconds(1))
        #expect(agent.isSynced)
        #expect(agent.statistics.serverLosses == 0)

        // A dropped connection still is.
        server.stop()
        #expect(await eventually { !agent.isSynced && agent.statistics.serverLosses == 1 })
    }

    @Test func anUpdateAHugzlessServerPublishedBeforeOurSubscriptionArrivedIsRecoveredBySnapshottingAgain() async throws {
        let context = try ZMQContext()
        let server = try ZguideStyleServer(context: context, dialect: .c, seed: [("/z/a", "1")])
        defer { server.stop() }
        let agent = try Self.agent(context, server, probeWait: .milliseconds(100))
        defer { agent.stop() }
        #expect(await agent.waitUntilSynced(timeout: .seconds(10)))
        #expect(agent.textMap() == ["/z/a": "1"])

        // Sequence 2 never reaches the agent; the first message it gets is 3, so its snapshot at 1
        // may lack an update, and it asks again.
        server.send(.publishedBeforeSubscription(key: "/z/b", value: "2"))
        server.send(.publish(key: "/z/c", value: "3"))
        #expect(await eventually { agent.textMap() == ["/z/a": "1", "/z/b": "2", "/z/c": "3"] })
        #expect(await eventually { agent.statistics.snapshotsCompleted == 2 && agent.isSynced })
        let statistics = agent.statistics
        #expect(statistics.unprovenSnapshotsRetaken == 1)
        #expect(statistics.unprovenSnapshotsConfirmed == 0)
        #expect(statistics.resyncs == 0)
        // The second snapshot went out after the subscription was proven.
        #expect(statistics.unprovenSnapshots == 1)
    }

    @Test("a clonesrv6 HUGZ settles a snapshot taken before it: its sequence shows whether one was missed",
          arguments: [false, true])
    func hugzSequenceSettlesAnUnprovenSnapshot(missedOne: Bool) async throws {
        let context = try ZMQContext()
        let server = try ZguideStyleServer(context: context, dialect: .python, seed: [("/z/a", "1")])
        defer { server.stop() }
        let agent = try Self.agent(context, server, probeWait: .milliseconds(100))
        defer { agent.stop() }
        #expect(await agent.waitUntilSynced(timeout: .seconds(10)))
        #expect(await eventually { agent.statistics.unprovenSnapshots == 1 })

        if missedOne { server.send(.publishedBeforeSubscription(key: "/z/b", value: "2")) }
        server.send(.hugz)
        #expect(await eventually { agent.statistics.hugzReceived == 1 })
        if missedOne {
            #expect(await eventually { agent.textMap() == ["/z/a": "1", "/z/b": "2"] })
            #expect(await eventually { agent.statistics.unprovenSnapshotsRetaken == 1 && agent.statistics.snapshotsCompleted == 2 })
        } else {
            #expect(await eventually { agent.statistics.unprovenSnapshotsConfirmed == 1 })
            #expect(agent.statistics.snapshotsCompleted == 1)
            #expect(agent.textMap() == ["/z/a": "1"])
        }
        #expect(agent.statistics.tolerated(.hugzFrames) == 1)
    }

    @Test("syncs from a clonesrv6 once its HUGZ proves the subscription, without waiting out probeWait",
          arguments: ZguideStyleServer.Dialect.allCases)
    func clonesrv6(dialect: ZguideStyleServer.Dialect) async throws {
        let context = try ZMQContext()
        let server = try ZguideStyleServer(context: context, dialect: dialect, hugzEvery: .milliseconds(50), seed: [("/z/a", "1")])
        defer { server.stop() }
        // No snapshot without proof for a minute: only a HUGZ can start it.
        let agent = try Self.agent(context, server, probeWait: .seconds(60))
        defer { agent.stop() }

        #expect(await agent.waitUntilSynced(timeout: .seconds(10)))
        #expect(agent.textMap() == ["/z/a": "1"])
        server.send(.publish(key: "/z/b", value: "2"))
        server.send(.publish(key: "/z/a", value: "3"))
        #expect(await eventually { agent.textMap() == ["/z/a": "3", "/z/b": "2"] })
        #expect(await eventually { agent.statistics.updatesApplied == 2 && agent.statistics.hugzReceived >= 1 })
        let statistics = agent.statistics
        #expect(statistics.unprovenSnapshots == 0)
        #expect(statistics.tolerated(.kvsyncFrames) == 1)
        #expect((statistics.tolerated(.hugzFrames) > 0) == (dialect == .python))
        #expect(statistics.serverLosses == 0)
        #expect(statistics.badInput.isEmpty)
    }
}
