import Clone
import FlowbusTesting
import Foundation
import MessagePath
import Testing
import ZeroMQ

/// A writer that asks for confirmations gets each write confirmed, sends again what is lost on
/// the way (here: dropped by the server's fault seam), and never has a write applied twice.
@Suite("Clone write confirmations")
struct CloneWriteConfirmationTests {
    @Test func writesLostOnTheWayAreSentAgainUntilConfirmed() async throws {
        let fixture = try CloneFixture()
        let reader = try await fixture.syncedAgent(["/w/"])
        let writer = try await fixture.syncedAgent(["/other/"]) { configuration in
            configuration.confirmWrites = true
            configuration.confirmAfter = .milliseconds(100)
        }
        // A third of the writes are lost: each one still arrives, by a later try.
        try fixture.faults.install(FaultRule(id: "third", scope: .key, prefix: "/w/", action: .drop, share: 0.3))
        for index in 0..<40 { try writer.set(key: "/w/k\(index)", value: "v\(index)".bytes) }
        #expect(await eventually(timeout: .seconds(30)) { reader.textMap(prefix: "/w/").count == 40 })
        #expect(await eventually { writer.statistics.writesUnconfirmed == 0 && writer.statistics.writesConfirmed == 40 })
        let statistics = writer.statistics
        #expect(statistics.writesResent > 0, "a third of the writes were dropped, none was sent again: \(statistics)")
        #expect(statistics.writesAbandoned == 0)
        #expect(reader.textMap(prefix: "/w/") == Dictionary(uniqueKeysWithValues: (0..<40).map { ("/w/k\($0)", "v\($0)") }))
        // Each key was published once: the server applied no write twice.
        // The server's counters are published periodically: wait for the last of them.
        #expect(await eventually { fixture.server!.statistics.updatesPublished >= 40 })
        try await Task.sleep(for: .milliseconds(300))
        let server = fixture.server!.statistics
        #expect(server.updatesPublished == 40, "\(server)")
        #expect(server.faultDropped == statistics.writesResent - server.duplicateWrites)
    }

    @Test func onlyTheNewestWriteOfAKeyIsSentAgain() async throws {
        let fixture = try CloneFixture()
        let reader = try await fixture.syncedAgent(["/n/"])
        let writer = try await fixture.syncedAgent(["/other/"]) { configuration in
            configuration.confirmWrites = true
            configuration.confirmAfter = .milliseconds(100)
        }
        try fixture.faults.install(FaultRule(id: "all", scope: .key, prefix: "/n/", action: .drop))
        try writer.set(key: "/n/k", value: "old".bytes)
        try writer.set(key: "/n/k", value: "new".bytes)
        #expect(await eventually { writer.statistics.writesResent >= 2 })
        fixture.faults.removeAll()
        #expect(await eventually { writer.statistics.writesUnconfirmed == 0 })
        try await Task.sleep(for: .milliseconds(300))
        #expect(reader.text("/n/k") == "new")
        #expect(fixture.server!.statistics.updatesPublished == 1, "the replaced write was sent again: \(fixture.server!.statistics)")
    }

    /// `settle` is what a coordinator waits on before it answers: it returns once every write
    /// made so far is confirmed, and not while one is being lost.
    @Test func settleWaitsUntilEveryWriteSoFarIsConfirmed() async throws {
        let fixture = try CloneFixture()
        let writer = try await fixture.syncedAgent(["/other/"]) { configuration in
            configuration.confirmWrites = true
            configuration.confirmAfter = .milliseconds(100)
        }
        try writer.set(key: "/s/first", value: "1".bytes)
        #expect(writer.settle(timeout: .seconds(5)), "a write on a quiet host was not confirmed")
        #expect(writer.writesMade == 1)
        // Every write of /s/lost/ is dropped: the wait runs out, and a later write's mark too.
        try fixture.faults.install(FaultRule(id: "lose", scope: .key, prefix: "/s/lost/", action: .drop))
        try writer.set(key: "/s/lost/a", value: "a".bytes)
        let lostMark = writer.writesMade
        try writer.set(key: "/s/kept", value: "k".bytes)
        #expect(!writer.settle(timeout: .milliseconds(400)), "settled while a write was being dropped")
        #expect(!writer.settle(through: lostMark, timeout: .milliseconds(100)))
        #expect(writer.settle(through: 1, timeout: .seconds(1)), "an earlier confirmed write counts as settled")
        // A newer write of the same key settles the older one, though the older is never confirmed.
        try writer.set(key: "/s/lost/a", value: "b".bytes)
        fixture.faults.removeAll()
        #expect(writer.settle(timeout: .seconds(5)), "the resent write was confirmed, yet settle did not return")
        #expect(writer.writesMade == 4)
        // A stopped agent settles nothing more.
        writer.stop()
        #expect(!writer.settle(through: 5, timeout: .seconds(1)))
    }

    /// `set(keys:value:)`: a value under several keys (a view model's two copies of a state) is
    /// queued at once, so the agent's thread takes the writes in one go; a refused key refuses all.
    @Test func writesQueuedTogetherAreTakenTogether() async throws {
        let fixture = try CloneFixture()
        let reader = try await fixture.syncedAgent(["/pair/"])
        let writer = try await fixture.syncedAgent(["/other/"]) { $0.confirmWrites = true }
        let before = writer.statistics.outboxTakes
        for index in 0..<20 {
            let uuids = try writer.set(keys: ["/pair/v/\(index)", "/pair/s/\(index)"], value: "state \(index)".bytes)
            #expect(Set(uuids).count == 2)
            // Taken and confirmed before the next pair is queued.
            #expect(writer.settle(timeout: .seconds(5)))
        }
        #expect(await eventually { reader.textMap(prefix: "/pair/").count == 40 })
        #expect(reader.text("/pair/v/7") == "state 7" && reader.text("/pair/s/7") == "state 7")
        #expect(await eventually { writer.statistics.writesQueued >= 40 })
        #expect(writer.statistics.outboxTakes - before == 20, "each pair was not taken in one go: \(writer.statistics)")
        let made = writer.writesMade
        #expect(throws: CloneWriteError.self) { try writer.set(keys: ["/pair/ok", "no leading slash"], value: "x".bytes) }
        #expect(writer.writesMade == made, "a pair with a refused key was partly queued")
        // A pair the outbox refuses whole (the agent stopped) is not queued, and its prepared
        // writes are let go once (a debug build traps on a double release).
        writer.stop()
        for _ in 0..<3 {
            #expect(throws: CloneWriteError.stopped) { try writer.set(keys: ["/pair/a", "/pair/b"], value: "late".bytes) }
        }
        #expect(writer.writesMade == made)
    }

    /// A writer that follows its own keys reads a write back once it is settled: the server
    /// publishes it before confirming it, and the agent says it settled only once the update is in
    /// its map (a view model reads its last state back on the next intent of the session).
    @Test func aSettledWriteIsReadBack() async throws {
        let fixture = try CloneFixture()
        let writer = try await fixture.syncedAgent(["/mine/"]) { $0.confirmWrites = true }
        let unread = try await onThread {
            var unread: [Int] = []
            for index in 0..<300 {
                let value = "value \(index)".bytes
                try writer.set(key: "/mine/state", value: value)
                guard writer.settle(timeout: .seconds(5)) else { return [-index] }
                if writer.get("/mine/state")?.value != value { unread.append(index) }
            }
            return unread
        }
        #expect(unread.isEmpty, "settled but not yet in the writer's map: writes \(unread)")
    }

    @Test func aWriteSentTwiceIsAppliedOnceAndConfirmedTwice() async throws {
        let fixture = try CloneFixture()
        let reader = try await fixture.syncedAgent(["/d/"])
        let confirmations = try ZMQSocket(context: fixture.context, type: .sub, linger: .zero)
        try confirmations.subscribe("ACK/00000000000000ab")
        try confirmations.setReceiveTimeout(.seconds(5))
        try confirmations.connect(fixture.endpoints.publisher)
        let writer = try CloneRobustnessTests.rawWriter(fixture)
        try await Task.sleep(for: .milliseconds(200))
        let uuid: [UInt8] = Array(repeating: 0xAB, count: 16)
        let kvset: [[UInt8]] = ["/d/k".bytes, [0, 0, 0, 0, 0, 0, 0, 0], uuid, "ack=00000000000000ab\n".bytes, "once".bytes]
        try writer.send(kvset)
        let first = try confirmations.receiveMessage()
        try writer.send(kvset)
        let second = try confirmations.receiveMessage()
        #expect(first?.first == "ACK/00000000000000ab".bytes && first?.last == uuid)
        #expect(second?.last == uuid)
        #expect(await eventually { reader.text("/d/k") == "once" })
        #expect(await eventually { fixture.server!.statistics.duplicateWrites == 1 })
        #expect(fixture.server!.statistics.updatesPublished == 1, "\(fixture.server!.statistics)")
        // The confirmation request is the server's business: subscribers see the write without it.
        #expect(reader.get("/d/k")?.properties[CloneProperties.ackName] == nil)
        // A malformed agent id is bad input, counted, not applied.
        try writer.send(["/d/bad".bytes, [0, 0, 0, 0, 0, 0, 0, 0], Array(repeating: 1, count: 16), "ack=nothex\n".bytes, "x".bytes])
        #expect(await eventually { fixture.server!.statistics.badInputTotal == 1 })
        #expect(reader.text("/d/bad") == nil)
    }
}
