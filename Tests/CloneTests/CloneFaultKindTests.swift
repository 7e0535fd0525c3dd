import Clone
import Foundation
import MessagePath
import Testing
import WireCheck

/// The fault kinds on the Clone server's write path: a delayed write is applied later, a
/// duplicated one twice unless its writer asked for a confirmation (then the server knows it),
/// a damaged one as damaged.
@Suite("Clone fault kinds")
struct CloneFaultKindTests {
    @Test func aDelayedWriteIsAppliedAfterLaterOnes() async throws {
        let fixture = try CloneFixture()
        let reader = try await fixture.syncedAgent(["/d/"])
        let writer = try await fixture.syncedAgent(["/other/"])
        try fixture.faults.install(FaultRule(id: "late", scope: .key, prefix: "/d/a", action: .delay(FaultDelay(base: 300))))
        try writer.set(key: "/d/a", value: "first".bytes)
        try writer.set(key: "/d/b", value: "second".bytes)
        #expect(await eventually { reader.text("/d/a") == "first" && reader.text("/d/b") == "second" })
        #expect(await eventually { fixture.server!.statistics.faults.delayed == 1 })
        // Applied after the write sent behind it: its sequence is the later one. (Read from the
        // sequences, not the clock: on a loaded machine the second write may itself take 300 ms.)
        let first = try #require(reader.get("/d/a")), second = try #require(reader.get("/d/b"))
        #expect(first.sequence > second.sequence, "the delayed write was applied first: \(first.sequence) before \(second.sequence)")
    }

    @Test func aDuplicatedWriteIsPublishedTwiceUnlessItsWriterAskedForAConfirmation() async throws {
        let fixture = try CloneFixture()
        let reader = try await fixture.syncedAgent(["/t/"])
        let plain = try await fixture.syncedAgent(["/other/"])
        let confirming = try await fixture.syncedAgent(["/other/"]) { $0.confirmWrites = true }
        try fixture.faults.install(FaultRule(id: "twice", scope: .key, prefix: "/t/", action: .duplicate(copies: 1)))
        try plain.set(key: "/t/plain", value: "p".bytes)
        #expect(await eventually { fixture.server!.statistics.updatesPublished == 2 })
        try confirming.set(key: "/t/confirmed", value: "c".bytes)
        #expect(await eventually { reader.text("/t/confirmed") == "c" && fixture.server!.statistics.duplicateWrites == 1 })
        #expect(fixture.server!.statistics.updatesPublished == 3, "the confirmed write was applied twice: \(fixture.server!.statistics)")
    }

    /// Reordering must not let an older value of a key replace a newer one: the server keeps each
    /// writer's count of writes (`wseq`) and drops one that arrives after a later write of it.
    @Test func aWriteOvertakenByALaterOneOfItsWriterIsDroppedNotApplied() async throws {
        let fixture = try CloneFixture()
        let reader = try await fixture.syncedAgent(["/r/"])
        let writer = try await fixture.syncedAgent(["/other/"])
        try fixture.faults.install(FaultRule(id: "late", scope: .key, prefix: "/r/", action: .delay(FaultDelay(base: 200)), limit: 2))
        try writer.set(key: "/r/k", value: "old".bytes)
        try writer.set(key: "/r/gone", value: "old".bytes)
        try writer.set(key: "/r/k", value: "new".bytes)
        try writer.delete(key: "/r/gone")
        #expect(await eventually { reader.text("/r/k") == "new" })
        #expect(await eventually { fixture.server!.statistics.staleWritesDropped == 2 })
        try await Task.sleep(for: .milliseconds(100))
        #expect(reader.text("/r/k") == "new", "the late older value must not replace the newer one")
        #expect(reader.text("/r/gone") == nil, "a set sent before a delete must not bring the key back")
        #expect(fixture.server!.statistics.updatesPublished == 2, "\(fixture.server!.statistics)")
    }

    /// A process replaced by a newer incarnation may still have writes on the way (held by a
    /// reorder, or sent by a process paused through its own restart). Once the new incarnation
    /// has written, the old one's writes are dropped and counted (`wgen`), deletes too, whatever
    /// their key; another writer is never fenced by it, and the new one's writes go through.
    @Test func aReplacedIncarnationsLateWritesAreDropped() async throws {
        let fixture = try CloneFixture()
        let reader = try await fixture.syncedAgent(["/g/"])
        let old = try await fixture.syncedAgent(["/other/"]) { $0.confirmWrites = true; $0.generation = ("coord-app/0", 1) }
        let new = try await fixture.syncedAgent(["/other/"]) { $0.confirmWrites = true; $0.generation = ("coord-app/0", 2) }
        let other = try await fixture.syncedAgent(["/other/"]) { $0.confirmWrites = true; $0.generation = ("coord-home/0", 1) }
        try old.set(key: "/g/before", value: "by 1".bytes)
        #expect(await eventually { reader.text("/g/before") == "by 1" }, "an incarnation's writes before its successor's are applied")
        try new.set(key: "/g/nav", value: "v4 by 2".bytes)
        try new.set(key: "/g/meta", value: "by 2".bytes)
        #expect(await eventually { reader.text("/g/meta") == "by 2" })
        try old.set(key: "/g/nav", value: "v4 by 1".bytes)
        try old.delete(key: "/g/meta")
        try old.set(key: "/g/own", value: "by 1".bytes)
        try other.set(key: "/g/other", value: "home".bytes)
        #expect(await eventually { reader.text("/g/other") == "home" })
        #expect(old.settle(timeout: .seconds(5)), "the fenced writes were not confirmed, so their writer would send them for good")
        // The server publishes its counters every few milliseconds, not with each confirmation.
        #expect(await eventually { fixture.server!.statistics.fencedWrites == 3 }, "\(fixture.server!.statistics)")
        #expect(reader.text("/g/nav") == "v4 by 2")
        #expect(reader.text("/g/meta") == "by 2")
        #expect(reader.text("/g/own") == nil)
        // The generation is the server's to weigh, not the subscribers' to see.
        #expect(reader.get("/g/nav")?.properties[CloneProperties.writerGenerationName] == nil)
        try new.set(key: "/g/nav", value: "v5 by 2".bytes)
        #expect(await eventually { reader.text("/g/nav") == "v5 by 2" })
        // A malformed generation is bad input, counted and not applied.
        let raw = try CloneRobustnessTests.rawWriter(fixture)
        try await Task.sleep(for: .milliseconds(200))
        try raw.send(["/g/bad".bytes, [0, 0, 0, 0, 0, 0, 0, 0], Array(repeating: 2, count: 16), "wgen=nonumber\n".bytes, "x".bytes])
        #expect(await eventually { fixture.server!.statistics.badInputTotal == 1 })
        #expect(reader.text("/g/bad") == nil)
    }

    /// A stale read: after the write, subscribers get the key's previous value once more (under
    /// a new sequence number, so the agent cannot tell); the map keeps the new one, which a
    /// snapshot serves.
    @Test func aStaleRuleServesThePreviousValueAgainAndKeepsTheNewOne() async throws {
        let fixture = try CloneFixture()
        let reader = try await fixture.syncedAgent(["/t/"])
        let writer = try await fixture.syncedAgent(["/other/"])
        try writer.set(key: "/t/k", value: "old".bytes)
        #expect(await eventually { reader.text("/t/k") == "old" })
        var seen: [String] = []
        let updates = reader.updates(prefix: "/t/", includeCurrent: false)
        try fixture.faults.install(FaultRule(id: "lag", scope: .key, prefix: "/t/", action: .stale))
        try writer.set(key: "/t/k", value: "new".bytes)
        for await update in updates {
            seen.append(String(decoding: update.value, as: UTF8.self))
            if seen.count == 2 { break }
        }
        #expect(seen == ["new", "old"])
        #expect(await eventually { fixture.server!.statistics.faults.staleServed == 1 })
        let late = try await fixture.syncedAgent(["/t/"])
        #expect(late.text("/t/k") == "new", "the map itself went stale")
        // A rule aimed at services is refused: only Clone values can be stale.
        #expect(throws: FaultRuleError.staleOnlyForKeys("svc")) {
            try FaultRule(id: "svc", scope: .service, prefix: "vm.", action: .stale).validate()
        }
    }

    @Test func aTruncatedWriteIsStoredCut() async throws {
        let fixture = try CloneFixture()
        let reader = try await fixture.syncedAgent(["/c/"])
        let writer = try await fixture.syncedAgent(["/other/"])
        try fixture.faults.install(FaultRule(id: "cut", scope: .key, prefix: "/c/", action: .truncate(bytes: 3)))
        try writer.set(key: "/c/k", value: "abcdefgh".bytes)
        #expect(await eventually { reader.text("/c/k") == "abc" })
        #expect(await eventually { fixture.server!.statistics.faults.damaged == 1 })
    }

    /// A server that requires the envelope check (as a Flowbus host's does) applies no damaged
    /// write and does not confirm it: the writer sends it again and the intact copy lands.
    @Test(arguments: [FaultAction.truncate(bytes: 7), .corrupt(bytes: 1)])
    func aDamagedWriteIsNotAppliedAndItsWriterSendsItAgain(damage: FaultAction) async throws {
        let fixture = try CloneFixture { $0.checkedPrefixes = ["/c/"] }
        let reader = try await fixture.syncedAgent(["/c/"])
        let writer = try await fixture.syncedAgent(["/other/"]) {
            $0.confirmWrites = true
            $0.confirmAfter = .milliseconds(200)
        }
        try fixture.faults.install(FaultRule(id: "damage", scope: .key, prefix: "/c/", action: damage, limit: 1))
        let value = WireCheck.sealed("abcdefghijkl".bytes)
        try writer.set(key: "/c/k", value: value)
        #expect(await eventually { reader.get("/c/k")?.value == value })
        let server = fixture.server!.statistics
        #expect(server.faults.damaged == 1 && server.damagedWrites == 1)
        #expect(await eventually { writer.statistics.writesResent >= 1 })
        // A value written without its check is refused the same way, and never lands; one
        // outside the checked trees needs none.
        try writer.set(key: "/c/unchecked", value: "abcdefghijkl".bytes)
        try writer.set(key: "/other/plain", value: "abcdefghijkl".bytes)
        #expect(await eventually { fixture.server!.statistics.damagedWrites >= 2 })
        #expect(reader.get("/c/unchecked") == nil)
        #expect(await eventually { await fixture.server!.textMap(prefix: "/other/")["/other/plain"] == "abcdefghijkl" })
    }
}
