import Clone
import Foundation
import Testing
import ZeroMQ

@Suite("Clone server and agents")
struct CloneReplicationTests {
    @Test func aSetReachesEveryAgent() async throws {
        let fixture = try CloneFixture()
        let first = try await fixture.syncedAgent()
        let second = try await fixture.syncedAgent(["/vm/"])
        try first.set(key: "/vm/signin/state", value: "loading".bytes)
        #expect(await eventually { first.text("/vm/signin/state") == "loading" && second.text("/vm/signin/state") == "loading" })
        try second.set(key: "/vm/signin/state", value: "success".bytes)
        #expect(await eventually { first.text("/vm/signin/state") == "success" && second.text("/vm/signin/state") == "success" })
        #expect(await fixture.server!.textMap() == ["/vm/signin/state": "success"])
        #expect(await eventually { first.statistics.writesSent == 1 && fixture.server!.statistics.updatesPublished == 2 })
        #expect(first.statistics.resyncs == 0)
    }

    @Test func theFirstWritesAfterConnectingAreNotLost() async throws {
        let fixture = try CloneFixture()
        let writer = try fixture.agent(["/w/"])
        // Written before the collector's subscription can have reached the agent's XPUB.
        for index in 0..<50 { try writer.set(key: "/w/\(index)", value: "\(index)".bytes) }
        #expect(await eventually { await fixture.server!.entries(prefix: "/w/").count == 50 })
        #expect(await eventually { writer.entries(prefix: "/w/").count == 50 })
        #expect(await eventually { writer.statistics.writesSent == 50 })
    }

    @Test func aLateJoinerGetsTheSnapshotThenLiveUpdatesWithoutDuplicatesOrLosses() async throws {
        let fixture = try CloneFixture()
        let writer = try await fixture.syncedAgent(["/late/"])
        for index in 0..<20 { try writer.set(key: "/late/k\(index)", value: "v\(index)".bytes) }
        #expect(await eventually { await fixture.server!.entries(prefix: "/late/").count == 20 })

        let joiner = try fixture.agent(["/late/"])
        // Whether the snapshot lands before or after this call, it reaches the stream exactly once.
        let stream = joiner.updates(prefix: "/late/")
        #expect(await joiner.waitUntilSynced(timeout: .seconds(10)))
        for index in 20..<40 { try writer.set(key: "/late/k\(index)", value: "v\(index)".bytes) }

        var seen: [CloneUpdate] = []
        for await update in stream {
            seen.append(update)
            if update.key == "/late/k39" { break }
        }
        let snapshotKeys = seen.filter(\.fromSnapshot).map(\.key)
        let liveKeys = seen.filter { !$0.fromSnapshot }.map(\.key)
        #expect(Set(snapshotKeys) == Set((0..<20).map { "/late/k\($0)" }))
        #expect(snapshotKeys.count == 20)
        #expect(liveKeys == (20..<40).map { "/late/k\($0)" })
        let liveSequences = seen.filter { !$0.fromSnapshot }.map(\.sequence)
        #expect(liveSequences == liveSequences.sorted() && Set(liveSequences).count == liveSequences.count)
        #expect(joiner.textMap() == Dictionary(uniqueKeysWithValues: (0..<40).map { ("/late/k\($0)", "v\($0)") }))
    }

    @Test func aSubtreeReceivesNothingOfItsNeighbour() async throws {
        let fixture = try CloneFixture()
        let writer = try await fixture.syncedAgent(["/s/"])
        try writer.set(key: "/s/abc/one", value: "1".bytes)
        try writer.set(key: "/s/abcd/two", value: "2".bytes)
        #expect(await eventually { writer.entries().count == 2 })

        let narrow = try await fixture.syncedAgent(["/s/abc/"])
        try writer.set(key: "/s/abcd/three", value: "3".bytes)
        try writer.set(key: "/s/abc/four", value: "4".bytes)
        #expect(await eventually { narrow.text("/s/abc/four") == "4" })
        #expect(narrow.textMap() == ["/s/abc/one": "1", "/s/abc/four": "4"])
        #expect(await eventually { narrow.statistics.updatesReceived == 1 })
    }

    @Test func anEmptyValueDeletes() async throws {
        let fixture = try CloneFixture()
        let agent = try await fixture.syncedAgent()
        let deletes = agent.updates(prefix: "/del/", includeCurrent: false)
        try agent.set(key: "/del/gone", value: "here".bytes)
        try agent.set(key: "/del/kept", value: "here".bytes)
        try agent.delete(key: "/del/gone")
        var deleted: CloneUpdate?
        for await update in deletes where update.isDelete {
            deleted = update
            break
        }
        #expect(deleted?.key == "/del/gone")
        #expect(deleted?.value == [])
        #expect(agent.textMap() == ["/del/kept": "here"])
        #expect(await fixture.server!.textMap() == ["/del/kept": "here"])
        let joiner = try await fixture.syncedAgent(["/del/"])
        #expect(joiner.textMap() == ["/del/kept": "here"])
    }

    @Test func ttlExpiryPublishesADelete() async throws {
        let fixture = try CloneFixture()
        let agent = try await fixture.syncedAgent()
        let changes = agent.updates(prefix: "/ttl/", includeCurrent: false)
        let started = ContinuousClock.now
        try agent.set(key: "/ttl/brief", value: "soon gone".bytes, ttl: .milliseconds(300))
        try agent.set(key: "/ttl/stays", value: "here".bytes)
        var seen: [CloneUpdate] = []
        for await update in changes {
            seen.append(update)
            if update.isDelete { break }
        }
        let lived = ContinuousClock.now - started
        #expect(seen.map(\.key) == ["/ttl/brief", "/ttl/stays", "/ttl/brief"])
        #expect(seen.first?.properties.ttl == .milliseconds(300))
        #expect(lived >= .milliseconds(290) && lived < .seconds(5))
        #expect(seen.last!.sequence > seen[1].sequence)
        #expect(await eventually { fixture.server!.statistics.ttlExpiries == 1 })
        #expect(await fixture.server!.textMap(prefix: "/ttl/") == ["/ttl/stays": "here"])
    }

    @Test func anOverwriteCancelsTheEarlierTTL() async throws {
        let fixture = try CloneFixture()
        let agent = try await fixture.syncedAgent()
        try agent.set(key: "/ttl2/k", value: "short".bytes, ttl: .milliseconds(100))
        try agent.set(key: "/ttl2/k", value: "kept".bytes)
        try agent.set(key: "/ttl2/marker", value: "m".bytes, ttl: .milliseconds(300))
        #expect(await eventually { fixture.server!.statistics.ttlExpiries == 1 })
        #expect(await fixture.server!.textMap(prefix: "/ttl2/") == ["/ttl2/k": "kept"])
    }

    @Test func hugzArriveWhenIdle() async throws {
        let fixture = try CloneFixture(hugz: .milliseconds(50))
        let agent = try await fixture.syncedAgent(["/quiet/"])
        let before = agent.statistics.hugzReceived
        #expect(await eventually(timeout: .seconds(5)) { agent.statistics.hugzReceived >= before + 3 })
        #expect(agent.statistics.updatesReceived == 0)
        #expect(agent.isSynced)
    }
}

@Suite("A writer's burst through a full collector")
struct CloneWriteBurstTests {
    /// 20,000 writes as fast as `set` takes them, into a collector that queues 50: the agent sends
    /// what it takes straight from the outbox while nothing waits, and holds the rest behind the
    /// first write the socket refused. Every write arrives, each key's writes in the order made.
    /// As KVSETs (`batchWrites` off: the socket fills, and the held queue is used) and in KVSETS
    /// batches (some 300 messages, which the queues on the way take without blocking).
    @Test(arguments: [false, true])
    func aBurstLargerThanTheCollectorsQueueArrivesWholeAndInOrder(batches: Bool) async throws {
        let fixture = try CloneFixture { configuration in
            configuration.collectorHighWaterMark = 50
        }
        let writer = try await fixture.syncedAgent(["/burst/"]) { $0.batchWrites = batches }
        let reader = try await fixture.syncedAgent(["/burst/"])
        let stream = reader.updates(prefix: "/burst/")
        let count = 20_000, keys = 16
        for index in 0..<count {
            // A full outbox (backlogFull) says wait a moment and write again.
            while !Self.write(writer, "/burst/k\(index % keys)", index) { usleep(100) }
        }
        // Read with a deadline: a lost write would leave the stream waiting.
        let reading = Task { () -> [Int] in
            var last = [Int](repeating: -1, count: keys)
            var seen = 0
            for await update in stream where !update.fromSnapshot {
                let index = Int(update.text) ?? -1
                let key = index % keys
                #expect(update.key == "/burst/k\(key)")
                #expect(index > last[key], "key \(key): \(index) after \(last[key])")
                last[key] = index
                seen += 1
                if seen == count { break }
            }
            return last + [seen]
        }
        let deadline = Task {
            try await Task.sleep(for: .seconds(60))
            reading.cancel()
        }
        var last = await reading.value
        deadline.cancel()
        let seen = last.removeLast()
        #expect(seen == count)
        #expect(last == (0..<keys).map { count - keys + $0 })
        // The agent publishes its counters every few milliseconds: wait for the last of them.
        #expect(await eventually { writer.statistics.writesSent == count }, "\(writer.statistics)")
        let statistics = writer.statistics
        if batches {
            #expect(statistics.writesBatched > count / 2, "\(statistics)")
        } else {
            // The collector's queue did fill: some writes went through the held queue.
            #expect(statistics.writesBlocked > 0, "\(statistics)")
            #expect(statistics.batchesSent == 0)
        }
        #expect(fixture.server!.statistics.staleWritesDropped == 0)
    }

    /// One write; false when the agent's outbox is full.
    static func write(_ agent: CloneAgent, _ key: String, _ index: Int) -> Bool {
        do {
            try agent.set(key: key, value: Array("\(index)".utf8))
            return true
        } catch {
            if case .backlogFull = error { return false }
            Issue.record("set failed: \(error)")
            return true
        }
    }
}
