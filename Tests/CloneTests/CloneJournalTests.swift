import Clone
import FlowbusTesting
import Foundation
import Testing

/// The map on disk: a server started on the journal of an earlier one (killed, not stopped)
/// holds what it held, at the same sequences, and carries the sequence and session chain on.
@Suite("Clone journal")
struct CloneJournalTests {
    static func journalPath() -> String {
        TestScratch.file("fbj") + "/data/clone.journal"
    }

    @Test func aRestartedServerStartsFromTheJournal() async throws {
        let path = Self.journalPath()
        let first = try CloneFixture { $0.journalPath = path }
        let writer = try await first.syncedAgent(["/other/"]) { $0.confirmWrites = true }
        try writer.set(key: "/s/a/nav", value: "one".bytes)
        try writer.set(key: "/s/a/nav", value: "two".bytes)
        try writer.set(key: "/s/a/gone", value: "x".bytes)
        try writer.delete(key: "/s/a/gone")
        try writer.set(key: "/v/home/a", value: "home".bytes)
        try writer.set(key: "/s/a/presence", value: "here".bytes, ttl: .seconds(60))
        #expect(await eventually { writer.statistics.writesConfirmed == 6 })
        let held = await first.server!.entries()
        first.server!.stop()
        // Read once the server has stopped: its counters are published every 20 ms while it runs,
        // and its last flush, as it stops, gives the sequence of its last update.
        let sequence = first.server!.statistics.sequence

        // A new server on the same file (and endpoints): the map as it was, without the ttl key.
        try first.startServer()
        let restored = await first.server!.entries()
        #expect(Dictionary(uniqueKeysWithValues: restored.map { ($0.key, $0.text) }) == ["/s/a/nav": "two", "/v/home/a": "home"])
        #expect(restored.map(\.sequence).sorted() == held.filter { $0.key != "/s/a/presence" }.map(\.sequence).sorted())
        #expect(await eventually { first.server!.statistics.journalRestored == 2 })
        // The sequence and the session chain go on from there.
        let reader = try await first.syncedAgent(["/s/a/"])
        #expect(reader.textMap() == ["/s/a/nav": "two"])
        try writer.set(key: "/s/a/nav", value: "three".bytes)
        #expect(await eventually { reader.text("/s/a/nav") == "three" })
        #expect(reader.get("/s/a/nav")!.sequence == sequence + 1)
        #expect(reader.statistics.resyncs == 0 && reader.statistics.gapsDetected == 0)
    }

    @Test func aTornLastRecordIsCutOffAndTheRestKept() async throws {
        let path = Self.journalPath()
        let first = try CloneFixture { $0.journalPath = path }
        let writer = try await first.syncedAgent(["/other/"]) { $0.confirmWrites = true }
        for index in 0..<5 { try writer.set(key: "/k/\(index)", value: "v\(index)".bytes) }
        #expect(await eventually { writer.statistics.writesConfirmed == 5 })
        first.server!.stop()
        // The host died in the middle of a write: half a record at the end.
        let handle = try #require(FileHandle(forWritingAtPath: path))
        handle.seekToEndOfFile()
        handle.write(Data([1, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 40, 0x2F]))
        handle.closeFile()
        let size = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        try first.startServer()
        #expect(await first.server!.entries().count == 5)
        let after = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        #expect(after == size - 14)
    }

    @Test func aJournalThatGrewIsCompactedAndKeepsTheSequence() async throws {
        let path = Self.journalPath()
        let fixture = try CloneFixture { configuration in
            configuration.journalPath = path
            configuration.journalCompactionBytes = 4_096
        }
        let writer = try await fixture.syncedAgent(["/other/"]) { $0.confirmWrites = true }
        for index in 0..<500 { try writer.set(key: "/k/same", value: "value \(index)".bytes) }
        try writer.set(key: "/k/ttl", value: "brief".bytes, ttl: .seconds(60))
        #expect(await eventually { writer.statistics.writesConfirmed == 501 })
        let statistics = fixture.server!.statistics
        #expect(statistics.journalCompactions > 0 && statistics.journalFailures == 0, "\(statistics)")
        let size = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        #expect(size < 8_192, "the journal holds \(size) bytes for one live key")
        fixture.server!.stop()
        try fixture.startServer()
        #expect(await fixture.server!.entries().map(\.text) == ["value 499"])
        #expect(await eventually { fixture.server!.statistics.sequence == 501 }, "\(fixture.server!.statistics)")
    }
}
