import Clone
import Foundation
import Testing
import ZeroMQ

@Suite("Clone under bad input and load")
struct CloneRobustnessTests {
    /// Connects a raw XPUB to the collector and waits for the server's subscription, so nothing
    /// sent afterwards is dropped by PUB filtering and every message can be counted.
    static func rawWriter(_ fixture: CloneFixture) throws -> ZMQSocket {
        let socket = try ZMQSocket(context: fixture.context, type: .xpub, linger: .zero)
        try socket.connect(fixture.endpoints.collector)
        try socket.setReceiveTimeout(.seconds(5))
        _ = try socket.receiveFrame()
        return socket
    }

    static func garbage(_ random: inout SystemRandomNumberGenerator) -> [[UInt8]] {
        let frameCount = Int.random(in: 1...7, using: &random)
        return (0..<frameCount).map { index in
            var frame = (0..<Int.random(in: 0...80, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            // Never a plausible key: frame 0 must not start with '/'.
            if index == 0, frame.first == UInt8(ascii: "/") { frame[0] = 0 }
            return frame
        }
    }

    @Test func garbageOnTheCollectorIsCountedAndServingGoesOn() async throws {
        let fixture = try CloneFixture()
        let agent = try await fixture.syncedAgent(["/g/"])
        let writers = try (0..<3).map { _ in try Self.rawWriter(fixture) }
        let malformedSets: [[[UInt8]]] = [
            [Array("/g/k".utf8), [0, 0, 1], [], [], Array("v".utf8)],
            [Array("/g/k".utf8), [0, 0, 0, 0, 0, 0, 0, 0], [1], [], Array("v".utf8)],
            [Array("/g/k".utf8), [0, 0, 0, 0, 0, 0, 0, 0], [], Array("ttl\n".utf8), Array("v".utf8)],
            [Array("/g/k".utf8), [0, 0, 0, 0, 0, 0, 0, 0], [], Array("ttl=-1\n".utf8), Array("v".utf8)],
            [Array("KTHXBAI".utf8), [0, 0, 0, 0, 0, 0, 0, 0], [], [], Array("v".utf8)],
            [Array("/g/k".utf8), [0, 0, 0, 0, 0, 0, 0, 0], [], [], Array(repeating: 7, count: 2 << 20)],
        ]
        var random = SystemRandomNumberGenerator()
        var sent = 0
        var written = 0
        var malformed = 0
        let deadline = ContinuousClock.now + .milliseconds(1500)
        while ContinuousClock.now < deadline {
            for writer in writers {
                try writer.send(Self.garbage(&random))
                sent += 1
            }
            try writers[0].send(malformedSets[malformed % malformedSets.count])
            malformed += 1
            sent += 1
            if sent % 50 == 0 {
                try agent.set(key: "/g/good\(written % 10)", value: "\(written)".bytes)
                written += 1
            }
            if sent % 200 == 0 { try await Task.sleep(for: .milliseconds(1)) }
        }
        #expect(await eventually { fixture.server!.statistics.badInputTotal == sent })
        let statistics = fixture.server!.statistics
        #expect(statistics.badInput(.malformedFrames) > 0)
        #expect(statistics.badInput(.oversize) > 0)
        #expect(statistics.badInput(.malformedProperties) > 0)
        #expect(statistics.badInput(.reservedKey) > 0)

        // The good writes all went through, and the server still serves snapshots and updates.
        let expected = Dictionary(uniqueKeysWithValues: (max(0, written - 10)..<written).map { ("/g/good\($0 % 10)", "\($0)") })
        #expect(await eventually { agent.textMap() == expected })
        #expect(await fixture.server!.textMap(prefix: "/g/") == expected)
        let joiner = try await fixture.syncedAgent(["/g/"])
        #expect(joiner.textMap() == expected)
        try agent.set(key: "/g/after", value: "ok".bytes)
        #expect(await eventually { joiner.text("/g/after") == "ok" })
    }

    /// The write order (`wseq`) and the writer's generation (`wgen`) are `<name>:<number>`, split
    /// at the last colon; anything else is refused and counted, and a good one is taken.
    @Test(arguments: ["wseq", "wgen"])
    func malformedWriteNumbersAreRefusedAndCounted(property: String) async throws {
        let fixture = try CloneFixture()
        let agent = try await fixture.syncedAgent(["/n/"])
        let writer = try Self.rawWriter(fixture)
        let bad = [":5", "abc:", "abc:x", "abc:5x", "abc:+5", "abc:-1", "abc:99999999999999999999", "abc", ""]
        for (index, text) in bad.enumerated() {
            try writer.send([Array("/n/bad\(index)".utf8), [0, 0, 0, 0, 0, 0, 0, 0], [], Array("\(property)=\(text)\n".utf8), Array("v".utf8)])
        }
        try writer.send([Array("/n/good".utf8), [0, 0, 0, 0, 0, 0, 0, 0], [], Array("\(property)=a:b/c:18446744073709551615\n".utf8), Array("ok".utf8)])
        #expect(await eventually { agent.text("/n/good") == "ok" })
        // The server publishes its counters every 5 ms: wait for the ones that saw every write.
        #expect(await eventually { fixture.server!.statistics.badInput(.malformedProperties) == bad.count }, "\(fixture.server!.statistics)")
        #expect(await fixture.server!.textMap(prefix: "/n/") == ["/n/good": "ok"])
    }

    @Test func malformedSnapshotRequestsAreDroppedAndTheNextGoodOneIsServed() async throws {
        let fixture = try CloneFixture()
        let writer = try await fixture.syncedAgent(["/m/"])
        try writer.set(key: "/m/a", value: "1".bytes)
        #expect(await eventually { await fixture.server!.entries().count == 1 })

        let dealer = try ZMQSocket(context: fixture.context, type: .dealer, linger: .zero)
        try dealer.connect(fixture.endpoints.snapshot)
        try dealer.setReceiveTimeout(.seconds(5))
        try dealer.send([Array("ICANHAZ?".utf8)])
        try dealer.send([Array("ICANHAZ?".utf8), Array("no-slash".utf8)])
        try dealer.send([Array("WHAT".utf8), []])
        try dealer.send([Array("ICANHAZ?".utf8), [], []])
        try dealer.send([Array("ICANHAZ?".utf8), Array("/m/".utf8)])

        let first = try #require(try dealer.receiveMessage())
        #expect(try CloneMessage.decode(first, on: .snapshotReply) == .kvsync(key: "/m/a", sequence: 1, value: Array("1".utf8)))
        let last = try #require(try dealer.receiveMessage())
        #expect(try CloneMessage.decode(last, on: .snapshotReply) == .kthxbai(sequence: 1, subtree: "/m/"))
        #expect(await eventually { fixture.server!.statistics.badInputTotal == 4 })
        #expect(fixture.server!.statistics.badInput(.invalidSubtree) == 1)
        #expect(fixture.server!.statistics.badInput(.unknownCommand) == 1)
        #expect(fixture.server!.statistics.snapshotsServed >= 2)
    }

    @Test func kthxbaiCarriesTheCurrentGlobalSequence() async throws {
        let fixture = try CloneFixture()
        let writer = try await fixture.syncedAgent()
        try writer.set(key: "/a/x", value: "1".bytes)
        try writer.set(key: "/b/y", value: "2".bytes)
        try writer.set(key: "/b/y", value: "3".bytes)
        #expect(await eventually { fixture.server!.statistics.sequence == 3 })
        let dealer = try ZMQSocket(context: fixture.context, type: .dealer, linger: .zero)
        try dealer.connect(fixture.endpoints.snapshot)
        try dealer.setReceiveTimeout(.seconds(5))
        try dealer.send(CloneMessage.icanhaz(subtree: "/a/").frames)
        let sync = try CloneMessage.decode(try #require(try dealer.receiveMessage()), on: .snapshotReply)
        let end = try CloneMessage.decode(try #require(try dealer.receiveMessage()), on: .snapshotReply)
        #expect(sync == .kvsync(key: "/a/x", sequence: 1, value: Array("1".utf8)))
        #expect(end == .kthxbai(sequence: 3, subtree: "/a/"))
    }

    @Test func manyKeysAndManyUpdatesConvergeForTwoAgents() async throws {
        let fixture = try CloneFixture()
        let first = try await fixture.syncedAgent()
        let second = try fixture.agent(["/load/a/", "/load/b/"])
        for round in 0..<4 {
            for index in 0..<500 {
                try first.set(key: "/load/a/\(index)", value: "first-\(round)-\(index)".bytes)
                try second.set(key: "/load/b/\(index % 250)", value: "second-\(round)-\(index)".bytes)
                // Deleted by the same writer right after its set, so the order at the server is known:
                // /load/b/41, 138 and 235 (set last at 291, 388, 485) end up deleted.
                if index % 97 == 0 { try second.delete(key: "/load/b/\(index % 250)") }
            }
            if round == 1 { try await Task.sleep(for: .milliseconds(20)) }
        }
        // A third agent joins while the others are still settling.
        let late = try fixture.agent(["/load/"])
        #expect(await eventually(timeout: .seconds(20)) {
            fixture.server!.statistics.updatesPublished == 4 * (500 + 500 + 6) && first.isSynced && second.isSynced && late.isSynced
        })
        let server = await fixture.server!.textMap(prefix: "/load/")
        #expect(server.count == 747)
        #expect(server["/load/b/41"] == nil && server["/load/b/0"] == "second-3-250")
        // Each agent applies what the server published on its own thread: wait for each to catch up.
        #expect(await eventually { first.textMap(prefix: "/load/") == server })
        #expect(await eventually { second.textMap() == server })
        #expect(await eventually { late.textMap() == server })
        #expect(first.statistics.gapsDetected == 0)
        #expect(second.statistics.gapsDetected == 0)
    }

    /// A subscriber that never reads fills its queue: the server counts what it could not take and
    /// goes on. A slow agent loses updates the same way; in a session subtree the chain shows the
    /// gap and a resync repairs it. (Outside sessions and the whole map, CHP cannot see such a gap.)
    @Test func aFullSubscriberQueueIsCountedAndASessionAgentRepairsItsOwnLosses() async throws {
        let fixture = try CloneFixture { $0.publisherHighWaterMark = 20 }
        let stuck = try ZMQSocket(context: fixture.context, type: .sub, linger: .zero)
        try stuck.setReceiveHighWaterMark(20)
        try stuck.subscribe("")
        try stuck.connect(fixture.endpoints.publisher)
        let agent = try await fixture.syncedAgent(["/s/hwm/"])
        #expect(await eventually { fixture.server!.statistics.subscriptionsReceived >= 2 })
        for index in 0..<2000 { try agent.set(key: "/s/hwm/\(index % 100)", value: "\(index)".bytes) }
        #expect(await eventually { fixture.server!.statistics.updatesPublished == 2000 })
        #expect(fixture.server!.statistics.publishBlocked > 0)
        // A session that stays active reveals any loss, even of its last updates: tick until the
        // agent has the latest tick and holds its snapshot.
        var tick = 0
        #expect(await eventually {
            tick += 1
            _ = try? agent.set(key: "/s/hwm/tick", value: "\(tick)".bytes)
            try? await Task.sleep(for: .milliseconds(20))
            return agent.isSynced && agent.text("/s/hwm/tick") == "\(tick)"
        })
        let server = await fixture.server!.textMap(prefix: "/s/hwm/")
        #expect(server["/s/hwm/99"] == "1999")
        #expect(agent.textMap() == server)
    }

    @Test func aBindErrorSaysWhichEndpointAndWhatToDo() throws {
        let context = try ZMQContext()
        let endpoints = try CloneEndpoints(base: "ipc:///nonexistent-flowbus-folder/c")
        #expect {
            _ = try CloneServer.start(context: context, endpoints: endpoints, logger: testLogger)
        } throws: { error in
            let text = "\(error)"
            return text.contains("could not bind ipc:///nonexistent-flowbus-folder/c.snapshot") && text.contains("writable folder")
        }
    }

    @Test func writesThatBreakTheRulesAreRefusedAtTheAgent() async throws {
        let fixture = try CloneFixture()
        let agent = try fixture.agent()
        #expect(throws: CloneWriteError.self) { try agent.set(key: "no-slash", value: [1]) }
        #expect(throws: CloneWriteError.self) { try agent.set(key: "HUGZ", value: [1]) }
        #expect(throws: CloneWriteError.self) { try agent.set(key: "/k", value: Array(repeating: 0, count: (1 << 20) + 1)) }
        #expect(throws: CloneWriteError.self) { try agent.set(key: "/k", value: [1], properties: [.init(name: "a", value: "x\ny")]) }
        #expect(throws: CloneDecodeError.self) { try agent.subscribe("/bad") }
        agent.stop()
        #expect(throws: CloneWriteError.stopped) { try agent.set(key: "/k", value: [1]) }
    }

    @Test func aSubtreeAddedAtRunTimeIsSynced() async throws {
        let fixture = try CloneFixture()
        let writer = try await fixture.syncedAgent(["/w/"])
        try writer.set(key: "/s/x/a", value: "1".bytes)
        try writer.set(key: "/s/y/a", value: "2".bytes)
        let agent = try await fixture.syncedAgent(["/s/x/"])
        #expect(await eventually { agent.textMap() == ["/s/x/a": "1"] })
        try agent.subscribe("/s/y/")
        #expect(await agent.waitUntilSynced(timeout: .seconds(5)))
        #expect(agent.textMap() == ["/s/x/a": "1", "/s/y/a": "2"])
        try writer.set(key: "/s/y/b", value: "3".bytes)
        #expect(await eventually { agent.text("/s/y/b") == "3" })
        // A wider subtree takes over the narrower ones.
        try agent.subscribe("/s/")
        #expect(await agent.waitUntilSynced(timeout: .seconds(5)))
        #expect(agent.textMap() == ["/s/x/a": "1", "/s/y/a": "2", "/s/y/b": "3"])
    }
}
