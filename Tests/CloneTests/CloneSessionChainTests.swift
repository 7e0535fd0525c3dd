import Clone
import Foundation
import MessagePath
import Testing
import ZeroMQ

@Suite("Clone session chain and resync")
struct CloneSessionChainTests {
    @Test func everyKVPUBOfASessionCarriesThePreviousSequenceOfThatSession() async throws {
        let fixture = try CloneFixture()
        let agent = try await fixture.syncedAgent()
        let stream = agent.updates(includeCurrent: false)
        try agent.set(key: "/s/one/nav", value: "a".bytes)
        try agent.set(key: "/s/two/nav", value: "b".bytes)
        try agent.set(key: "/vm/x", value: "c".bytes)
        try agent.set(key: "/s/one/state", value: "d".bytes, properties: [.init(name: "sprev", value: "999")])
        try agent.delete(key: "/s/one/nav")
        var seen: [CloneUpdate] = []
        for await update in stream {
            seen.append(update)
            if seen.count == 5 { break }
        }
        let previous = seen.map { $0.properties.sessionPrevious }
        #expect(previous == [0, 0, nil, seen[0].sequence, seen[3].sequence])
        // The writer's own sprev is replaced by the server's.
        #expect(seen[3].properties.filter { $0.name == "sprev" }.count == 1)
        #expect(seen[4].isDelete)
        #expect(agent.statistics.gapsDetected == 0)
        // The map keeps the writer's properties, not the chain the update carried.
        #expect(agent.get("/s/one/state")?.properties.isEmpty == true)
        #expect(agent.get("/s/two/nav")?.properties.isEmpty == true)
    }

    @Test func updatesDroppedByAServerFaultRuleLeaveNoGap() async throws {
        let fixture = try CloneFixture()
        let watcher = try await fixture.syncedAgent(["/s/f1/"])
        let writer = try await fixture.syncedAgent(["/w/"])
        try fixture.faults.install(FaultRule(id: "f1", scope: .key, prefix: "/s/f1/lost", action: .drop))
        for index in 0..<5 {
            try writer.set(key: "/s/f1/lost\(index)", value: "x".bytes)
            try writer.set(key: "/s/f1/kept\(index)", value: "y".bytes)
        }
        #expect(await eventually { watcher.entries().count == 5 })
        fixture.faults.removeAll()
        try writer.set(key: "/s/f1/after", value: "z".bytes)
        #expect(await eventually { watcher.text("/s/f1/after") == "z" })
        #expect(await eventually { fixture.server!.statistics.faultDropped == 5 })
        #expect(watcher.statistics.gapsDetected == 0)
        #expect(watcher.statistics.resyncs == 0)
        #expect(await fixture.server!.entries(prefix: "/s/f1/lost").isEmpty)
        #expect(watcher.textMap() == (await fixture.server!.textMap(prefix: "/s/f1/")))
    }

    /// Drops one KVPUB between the server and one agent only: the next update of that session
    /// breaks the chain, and the agent resyncs to the server's state.
    @Test func aMissedSessionUpdateIsDetectedAndRepairedByResync() async throws {
        let fixture = try CloneFixture()
        let link = FaultRules()
        let victim = try await fixture.syncedAgent(["/s/g1/"]) { $0.incomingFaults = link }
        let bystander = try await fixture.syncedAgent(["/s/g1/"])
        let writer = try await fixture.syncedAgent(["/w/"])

        try link.install(FaultRule(id: "lossy", scope: .key, prefix: "/s/g1/a", action: .drop))
        try writer.set(key: "/s/g1/a", value: "1".bytes)
        #expect(await eventually { victim.statistics.faultDropped == 1 })
        link.removeAll()
        #expect(victim.text("/s/g1/a") == nil)

        try writer.set(key: "/s/g1/b", value: "2".bytes)
        #expect(await eventually { victim.textMap() == ["/s/g1/a": "1", "/s/g1/b": "2"] })
        #expect(await eventually { victim.statistics.resyncs >= 1 })
        #expect(victim.statistics.gapsDetected >= 1)
        #expect(bystander.textMap() == ["/s/g1/a": "1", "/s/g1/b": "2"])
        #expect(bystander.statistics.gapsDetected == 0)
        #expect(await victim.waitUntilSynced(timeout: .seconds(5)))

        // After the resync the chain is followed again from the snapshot.
        try writer.set(key: "/s/g1/c", value: "3".bytes)
        #expect(await eventually { victim.text("/s/g1/c") == "3" })
        #expect(await eventually { victim.statistics.gapsDetected == 1 })
    }

    @Test func aMissedUpdateOfTheWholeMapIsDetectedByTheGlobalSequence() async throws {
        let fixture = try CloneFixture()
        let link = FaultRules()
        let victim = try await fixture.syncedAgent([""]) { $0.incomingFaults = link }
        try link.install(FaultRule(id: "lossy", scope: .key, prefix: "/plain/a", action: .drop))
        try victim.set(key: "/plain/a", value: "1".bytes)
        #expect(await eventually { victim.statistics.faultDropped == 1 })
        link.removeAll()
        try victim.set(key: "/plain/b", value: "2".bytes)
        #expect(await eventually { victim.textMap() == ["/plain/a": "1", "/plain/b": "2"] })
        // Counters are published every 20 ms: wait for them too.
        #expect(await eventually { victim.statistics.gapsDetected >= 1 })
    }

    @Test func aServerThatGoesAwayAndComesBackIsResyncedFrom() async throws {
        let fixture = try CloneFixture()
        let agent = try await fixture.syncedAgent(["/r/"])
        try agent.set(key: "/r/old", value: "1".bytes)
        #expect(await eventually { agent.text("/r/old") == "1" })

        fixture.server!.stop()
        #expect(await eventually { !agent.isSynced })
        // Written while the server is down: held, then sent to the new server.
        try agent.set(key: "/r/held", value: "2".bytes)
        try fixture.startServer()

        #expect(await agent.waitUntilSynced(timeout: .seconds(10)))
        // The new server starts empty except for the held write; the agent converges to it.
        #expect(await eventually { agent.textMap() == ["/r/held": "2"] })
        #expect(await fixture.server!.textMap() == ["/r/held": "2"])
        #expect(await eventually { agent.statistics.serverLosses >= 1 && agent.statistics.resyncs >= 1 })
    }

    @Test func aSilentServerIsNoticedByTheAbsenceOfHugz() async throws {
        // HUGZ every 1.5 s against an agent timeout of 500 ms: between two HUGZ the agent must call
        // the server gone, and the next HUGZ brings it back with a new snapshot.
        let fixture = try CloneFixture(hugz: .milliseconds(1500))
        let agent = try fixture.agent(["/q/"], timeout: .milliseconds(500))
        #expect(await agent.waitUntilSynced(timeout: .seconds(8)))
        #expect(await eventually { agent.statistics.serverLosses >= 1 })
        #expect(await eventually { agent.statistics.snapshotsCompleted >= 2 && agent.statistics.resyncs >= 1 })
    }
}
