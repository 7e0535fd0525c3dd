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

    /// Updates the agent cannot take are counted by kind and dropped; the good ones around them
    /// are applied, every field as sent (read where the subscriber socket holds it).
    @Test func badUpdatesAreCountedAndTheGoodOnesAroundThemApplied() async throws {
        let context = try ZMQContext()
        let server = try ZguideStyleServer(context: context, dialect: .c, seed: [("/z/a", "1")])
        defer { server.stop() }
        var configuration = CloneAgentConfiguration(subtrees: ["/z/"])
        configuration.serverTimeout = .seconds(5)
        configuration.probeWait = .milliseconds(100)
        configuration.statisticsInterval = .milliseconds(5)
        configuration.maxValueBytes = 64
        let agent = try CloneAgent(context: context, endpoints: server.endpoints, configuration: configuration, logger: testLogger)
        defer { agent.stop() }
        #expect(await agent.waitUntilSynced(timeout: .seconds(10)))
        let sequence: Frame = [0, 0, 0, 0, 0, 0, 0, 9]
        let uuid = Frame(repeating: 0xAB, count: 16)
        for frames: [Frame] in [
            [Array("/z/b".utf8), [0, 0, 9], [], [], [1]],                         // a sequence of 3 bytes
            [Array("/z/b".utf8), sequence, [1, 2, 3], [], [1]],                   // a UUID of 3 bytes
            [Array("/z/b\u{7}".utf8), sequence, [], [], [1]],                     // a key with a control byte
            [Array("/z/b".utf8), sequence, [], Array("no-equals-sign\n".utf8), [1]],  // properties
            [Array("/z/b".utf8), sequence, [], []],                               // four frames
            [Array("/z/b".utf8), sequence, [], [], Frame(repeating: 1, count: 65)],  // over maxValueBytes
            [Array("/z/b".utf8), sequence, [], [], [1], [2]],                     // six frames
        ] {
            server.send(.raw(frames))
        }
        server.send(.publish(key: "/z/c", value: "3"))
        #expect(await eventually { agent.textMap()["/z/c"] == "3" })
        #expect(await eventually { agent.statistics.badInput.values.reduce(0, +) == 7 }, "\(agent.statistics.badInput)")
        let statistics = agent.statistics
        #expect(statistics.badInput(.malformedFrames) == 3)
        #expect(statistics.badInput(.invalidKey) == 1)
        #expect(statistics.badInput(.malformedProperties) == 1)
        #expect(statistics.badInput(.oversize) == 2)
        #expect(agent.textMap() == ["/z/a": "1", "/z/c": "3"])
        // A good update with every field set arrives whole.
        server.send(.raw([Array("/z/d".utf8), [0, 0, 0, 0, 0, 0, 0, 3], uuid, Array("ttl=30\n".utf8), Array("four".utf8)]))
        #expect(await eventually { agent.textMap()["/z/d"] == "four" })
        let entry = try #require(agent.get("/z/d"))
        #expect(entry.sequence == 3 && entry.uuid == UUID(uuid: (0xAB, 0xAB, 0xAB, 0xAB, 0xAB, 0xAB, 0xAB, 0xAB, 0xAB, 0xAB, 0xAB, 0xAB, 0xAB, 0xAB, 0xAB, 0xAB)))
        #expect(entry.properties == (try CloneProperties(decoding: Array("ttl=30\n".utf8))))
        #expect(agent.statistics.badInput.values.reduce(0, +) == 7)
    }

    /// The snapshot and the updates come over different connections, so an update the server
    /// published just before the snapshot can arrive just after it. The snapshot holds it: it is
    /// dropped, not taken for a restarted server. Once a newer update has come, an older one is.
    @Test func anUpdateOvertakenByTheSnapshotIsDroppedNotTakenForARestart() async throws {
        let context = try ZMQContext()
        let server = try ZguideStyleServer(context: context, dialect: .c, seed: [("/z/a", "1"), ("/z/b", "2")])
        defer { server.stop() }
        let agent = try Self.agent(context, server, probeWait: .milliseconds(100), timeout: .seconds(5))
        defer { agent.stop() }
        #expect(await agent.waitUntilSynced(timeout: .seconds(10)))
        #expect(agent.textMap() == ["/z/a": "1", "/z/b": "2"])
        // Sequence 1, /z/a's first value, arriving after the snapshot of sequence 2.
        server.send(.raw([Array("/z/a".utf8), [0, 0, 0, 0, 0, 0, 0, 1], [], [], Array("0".utf8)]))
        server.send(.publish(key: "/z/c", value: "3"))
        #expect(await eventually { agent.textMap()["/z/c"] == "3" })
        #expect(agent.textMap() == ["/z/a": "1", "/z/b": "2", "/z/c": "3"])
        // The counters are published every 5 ms: wait for the ones that saw /z/c.
        #expect(await eventually { agent.statistics.updatesApplied >= 1 && agent.statistics.duplicatesDiscarded >= 1 })
        let statistics = agent.statistics
        #expect(statistics.duplicatesDiscarded == 1 && statistics.gapsDetected == 0 && statistics.resyncs == 0, "\(statistics)")
        // After sequence 3, a sequence 2 can only come from a server that counts again.
        server.send(.raw([Array("/z/b".utf8), [0, 0, 0, 0, 0, 0, 0, 2], [], [], Array("9".utf8)]))
        #expect(await eventually { agent.statistics.gapsDetected == 1 })
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
