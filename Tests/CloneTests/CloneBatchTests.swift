import Clone
import Foundation
import Testing
import ZeroMQ

/// KVSETS: writes an agent takes from its queue together go to a Flowbus server as one message;
/// the server takes each as a KVSET, counts what is wrong with any of them, and publishes KVPUBs.
@Suite("Clone KVSETS batches")
struct CloneBatchTests {
    /// Writes packed as an agent packs them, for a raw writer.
    static func batch(_ writes: [(key: String, value: String)], properties: String = "") -> [UInt8] {
        KVSetBatch.packed(writes.map { write in
            (Array(write.key.utf8), withUnsafeBytes(of: UUID().uuid) { Array($0) }, Array(properties.utf8), Array(write.value.utf8))
        })
    }

    @Test func writesQueuedTogetherGoAsOneBatchAndAreSequencedInOrder() async throws {
        let fixture = try CloneFixture()
        let reader = try await fixture.syncedAgent(["/b/"])
        let writer = try await fixture.syncedAgent(["/other/"]) { $0.confirmWrites = true }
        let keys = (0..<50).map { "/b/k\($0)" }
        try writer.set(keys: keys, value: "v".bytes)
        #expect(await eventually { reader.textMap(prefix: "/b/").count == 50 })
        #expect(await eventually { writer.statistics.writesConfirmed == 50 }, "\(writer.statistics)")
        let statistics = writer.statistics
        #expect(statistics.batchesSent == 1 && statistics.writesBatched == 50, "\(statistics)")
        let sequences = keys.compactMap { reader.get($0)?.sequence }
        #expect(sequences.count == 50 && zip(sequences, sequences.dropFirst()).allSatisfy { $1 == $0 + 1 }, "\(sequences)")
        #expect(await eventually { fixture.server!.statistics.batchedWrites == 50 }, "\(fixture.server!.statistics)")
        #expect(fixture.server!.statistics.batchesReceived == 1)
        #expect(fixture.server!.statistics.badInputTotal == 0)

        // A lone write goes as a KVSET; so does every write of an agent told not to batch.
        try writer.set(key: "/b/alone", value: "1".bytes)
        let plain = try await fixture.syncedAgent(["/other/"]) { $0.batchWrites = false }
        try plain.set(keys: ["/b/p1", "/b/p2"], value: "p".bytes)
        #expect(await eventually { reader.text("/b/alone") == "1" && reader.text("/b/p2") == "p" })
        #expect(await eventually { writer.statistics.writesSent == 51 && plain.statistics.writesSent == 2 })
        #expect(writer.statistics.batchesSent == 1)
        #expect(plain.statistics.batchesSent == 0)
        #expect(fixture.server!.statistics.batchesReceived == 1)
    }

    /// Writes held while the server is away go out in batches when it is back, in their order,
    /// each with its own value.
    @Test func writesHeldWhileTheServerIsAwayGoInBatchesWhenItIsBack() async throws {
        let fixture = try CloneFixture()
        let writer = try await fixture.syncedAgent(["/other/"]) { $0.confirmWrites = true }
        fixture.server!.stop()
        // Once the collector's subscription is gone, writes wait in the agent.
        let held = try await eventually {
            try writer.set(key: "/h/probe", value: "p".bytes)
            return writer.statistics.writesHeld > 0
        }
        #expect(held, "writes did not wait for the stopped server: \(writer.statistics)")
        for index in 0..<200 { try writer.set(key: "/h/k\(index)", value: "v\(index)".bytes) }
        try fixture.startServer()
        let reader = try await fixture.syncedAgent(["/h/"])
        #expect(await eventually(timeout: .seconds(20)) { reader.textMap(prefix: "/h/k").count == 200 }, "\(writer.statistics)")
        #expect(reader.textMap(prefix: "/h/k") == Dictionary(uniqueKeysWithValues: (0..<200).map { ("/h/k\($0)", "v\($0)") }))
        let sequences = (0..<200).compactMap { reader.get("/h/k\($0)")?.sequence }
        #expect(sequences == sequences.sorted(), "held writes were applied out of their order")
        #expect(await eventually { writer.statistics.writesBatched >= 200 - KVSetBatch.maxWrites }, "\(writer.statistics)")
        #expect(writer.statistics.batchesSent >= 3, "\(writer.statistics)")
    }

    @Test func aBatchsBadWritesAndItsCutAreCountedAndItsGoodWritesTaken() async throws {
        let fixture = try CloneFixture()
        let reader = try await fixture.syncedAgent(["/r/"])
        let writer = try CloneRobustnessTests.rawWriter(fixture)
        // A good write, one with a key that breaks the rules, another good one, then one cut short.
        var first = Self.batch([("/r/one", "1"), ("no-slash", "x"), ("/r/two", "2")])
        first += Self.batch([("/r/cut", "3")]).dropLast()
        try writer.send([KVSetBatch.command, first])
        try writer.send([KVSetBatch.command, []])
        try writer.send([KVSetBatch.command, Self.batch([("/r/three", "3")], properties: "ttl=-1\n")])
        try writer.send([KVSetBatch.command, Self.batch([("/r/after", "ok")])])
        #expect(await eventually { reader.text("/r/after") == "ok" })
        #expect(reader.textMap(prefix: "/r/") == ["/r/one": "1", "/r/two": "2", "/r/after": "ok"])
        #expect(await eventually { fixture.server!.statistics.batchesReceived == 4 }, "\(fixture.server!.statistics)")
        let statistics = fixture.server!.statistics
        #expect(statistics.batchedWrites == 5, "\(statistics)")
        #expect(statistics.badInput(.invalidKey) == 1)
        #expect(statistics.badInput(.malformedFrames) == 2, "the cut batch and the empty one: \(statistics)")
        #expect(statistics.badInput(.malformedProperties) == 1)
        #expect(statistics.badInputTotal == 4)
        #expect(await fixture.server!.textMap(prefix: "/r/") == ["/r/one": "1", "/r/two": "2", "/r/after": "ok"])
    }

    /// A collector that does not subscribe to KVSETS (another 12/CHP server) gets a KVSET a write.
    @Test func anAgentSendsKVSETsToACollectorThatTakesNoBatches() async throws {
        let fixture = try CloneFixture()
        let collector = try ZMQSocket(context: fixture.context, type: .sub, linger: .zero)
        let endpoint = ipcBase() + "-plain"
        try collector.bind(endpoint)
        try collector.subscribe("")
        try collector.setReceiveTimeout(.seconds(5))
        var configuration = CloneAgentConfiguration(subtrees: ["/x/"])
        configuration.statisticsInterval = .milliseconds(5)
        let agent = try CloneAgent(
            context: fixture.context,
            endpoints: CloneEndpoints(snapshot: fixture.endpoints.snapshot, publisher: fixture.endpoints.publisher, collector: endpoint),
            configuration: configuration, logger: testLogger)
        defer { agent.stop() }
        #expect(await agent.waitUntilSynced(timeout: .seconds(10)))
        try agent.set(keys: ["/x/a", "/x/b", "/x/c"], value: "v".bytes)
        let messages = try (0..<3).map { _ in try #require(try collector.receiveMessage()) }
        #expect(messages.map(\.count) == [5, 5, 5])
        #expect(messages.map { String(decoding: $0[0], as: UTF8.self) } == ["/x/a", "/x/b", "/x/c"])
        #expect(await eventually { agent.statistics.writesSent == 3 })
        #expect(agent.statistics.batchesSent == 0)
    }

    /// Whatever bytes a batch holds, reading it never traps: it ends, or says where it broke.
    @Test func readingAnyBytesEndsOrSaysWhereTheBatchBroke() {
        var random = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let bytes = (0..<Int.random(in: 0...120, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            bytes.withUnsafeBytes { frame in
                var reader = KVSetBatch.Reader(frame)
                var read = 0
                while true {
                    do {
                        guard let entry = try reader.next() else { break }
                        read += entry.key.count + entry.uuid.count + entry.properties.count + entry.value.count + KVSetBatch.entryOverhead
                    } catch {
                        #expect("\(error)".contains("batch"))
                        return
                    }
                }
                #expect(read == bytes.count, "a batch read to its end must account for every byte")
            }
        }
        // What `append` writes reads back as it was.
        let packed = Self.batch([("/a", "1"), ("/bb", ""), ("/c", String(repeating: "z", count: 300))], properties: "ttl=5\n")
        packed.withUnsafeBytes { frame in
            var reader = KVSetBatch.Reader(frame)
            var read: [(String, String, String)] = []
            while let entry = try? reader.next() {
                read.append((String(decoding: entry.key, as: UTF8.self), String(decoding: entry.properties, as: UTF8.self), String(decoding: entry.value, as: UTF8.self)))
                #expect(entry.uuid.count == 16)
            }
            #expect(read.map(\.0) == ["/a", "/bb", "/c"])
            #expect(read.allSatisfy { $0.1 == "ttl=5\n" })
            #expect(read.map(\.2) == ["1", "", String(repeating: "z", count: 300)])
        }
    }
}
