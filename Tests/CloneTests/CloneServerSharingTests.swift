import Clone
import Foundation
import Synchronization
import Testing
import ZeroMQ

/// What the server holds once for many keys (issue 16: memory per session).
@Suite("Clone server sharing equal bytes")
struct CloneServerSharingTests {
    static func address(_ bytes: [UInt8]) -> UnsafeRawPointer? {
        bytes.withUnsafeBytes { $0.baseAddress }
    }

    @Test("a value written under two keys in a row, as a view model writes its state, is held once")
    func consecutiveEqualValuesShareOneArray() async throws {
        // Not packed meanwhile (a packed value is read back into an array of its own).
        let fixture = try CloneFixture { $0.packValuesAfter = nil }
        let server = try #require(fixture.server)
        let writer = try await fixture.syncedAgent(["/s/"])
        let state = Array(String(repeating: "a view model's state ", count: 8).utf8)
        try writer.set(key: "/v/signin/abc", value: state)
        try writer.set(key: "/s/abc/vm/signin", value: state)
        try writer.set(key: "/s/abc/nav", value: Array("another value".utf8))
        #expect(await eventually { await server.entries(prefix: "/").count == 3 })
        let entries = Dictionary(uniqueKeysWithValues: await server.entries(prefix: "/").map { ($0.key, $0.value) })
        let mirror = try #require(entries["/v/signin/abc"])
        let session = try #require(entries["/s/abc/vm/signin"])
        #expect(mirror == state && session == state)
        #expect(Self.address(mirror) == Self.address(session), "one array for both keys")
        #expect(Self.address(try #require(entries["/s/abc/nav"])) != Self.address(mirror))
    }

    @Test("values unchanged for a while are packed; snapshots, entries and counts see them whole")
    func unchangedValuesArePacked() async throws {
        let fixture = try CloneFixture { $0.packValuesAfter = .milliseconds(50) }
        let server = try #require(fixture.server)
        let writer = try await fixture.syncedAgent(["/s/"])
        let sessions = (0..<40).map { String(format: "s%08d", $0) }
        var written: [String: [UInt8]] = [:]
        for (index, session) in sessions.enumerated() {
            let nav = ValueDeltasTests.value(session: session, time: 1_000 + index)
            let record = Array("record of \(session): open, flow auth, opened at \(2_000 + index), idle limit 3600 s".utf8)
            // A view model's state, written twice in a row: the second copy shares the first one's
            // delta. A third copy, under a key of another name, cannot: its delta would write
            // the first key's name (the session's id) as its own.
            let state = Array("state of \(session): phase success, screen signin, presentation text, actions logIn".utf8)
            for (key, value) in [("/s/\(session)/nav", nav), ("/c/app/\(session)", record), ("/s/\(session)/tiny", Array("x".utf8)),
                                 ("/v/x/\(session)", state), ("/s/\(session)/vm/x", state), ("/c/copy/\(session)-2", state)] {
                try writer.set(key: key, value: value)
                written[key] = value
            }
        }
        let bytes = written.reduce(0) { $0 + $1.key.utf8.count + $1.value.count }
        // All but the first value of each of the 5 shapes: a shape's references are made from its
        // second value on (the first session's values stay whole).
        #expect(await eventually { server.statistics.valuesPacked == 195 }, "\(server.statistics.valuesPacked) of 195 values packed")
        let packed = server.statistics
        #expect(packed.storeBytes == bytes, "the quotas count values whole")
        let firstSession = "\(sessions[0])"
        #expect(packed.packedValueBytes == written.filter { $0.value.count > 1 && !$0.key.contains(firstSession) }.reduce(0) { $0 + $1.value.count })
        #expect(packed.packedBytes * 3 < packed.packedValueBytes, "\(packed.packedValueBytes) bytes packed to \(packed.packedBytes)")
        #expect(packed.packReferences == 4, "one for the navigations, one for the records, one for both copies of the states, one for the third copies")

        let entries = await server.entries(prefix: "/")
        #expect(Dictionary(uniqueKeysWithValues: entries.map { ($0.key, $0.value) }) == written)
        let reader = try await fixture.syncedAgent([""])
        for (key, value) in written { #expect(reader.get(key)?.value == value, "\(key) from a snapshot") }

        // A packed value written again is held whole until it has stayed a while; a deleted
        // one leaves the counts. The first navigation, whole so far, packs now its shape has
        // references.
        let changed = ValueDeltasTests.value(session: sessions[0], time: 9_999, screens: 4)
        try writer.set(key: "/s/\(sessions[0])/nav", value: changed)
        try writer.delete(key: "/c/app/\(sessions[1])")
        #expect(await eventually { server.statistics.storeBytes == bytes + changed.count - written["/s/\(sessions[0])/nav"]!.count - "/c/app/\(sessions[1])".utf8.count - written["/c/app/\(sessions[1])"]!.count })
        #expect(await eventually { server.statistics.valuesPacked == 195 })
        let late = try await fixture.syncedAgent(["/s/\(sessions[0])/"])
        #expect(late.get("/s/\(sessions[0])/nav")?.value == changed)
        for key in written.keys { try writer.delete(key: key) }
        #expect(await eventually { server.statistics.storeBytes == 0 && server.statistics.valuesPacked == 0 })
        #expect(server.statistics.packedBytes == 0 && server.statistics.packedValueBytes == 0)
    }

    @Test("the deltas of deleted values are compacted away; the values left read back whole")
    func packedValuesCompacted() async throws {
        let fixture = try CloneFixture { $0.packValuesAfter = .milliseconds(20) }
        let server = try #require(fixture.server)
        let writer = try await fixture.syncedAgent(["/s/"])
        var written: [String: [UInt8]] = [:]
        for index in 0..<4_000 {
            let session = String(format: "c%08d", index)
            // A token of its own in each, so each delta is some 60 bytes.
            let value = ValueDeltasTests.value(session: session, time: 1_795_895_737_544 + index) + Array(" token \(UUID())".utf8)
            try writer.set(key: "/s/\(session)/nav", value: value)
            written["/s/\(session)/nav"] = value
        }
        // All but the first, which stays whole.
        #expect(await eventually(timeout: .seconds(20)) { server.statistics.valuesPacked == 3_999 })
        let full = server.statistics.packArenaBytes
        #expect(full == server.statistics.packedBytes, "no holes yet")
        #expect(full > 3 * 64 * 1024, "enough to be compacted: \(full) bytes")
        // Three sessions of four close.
        for (index, key) in written.keys.sorted().enumerated() where index % 4 != 0 {
            try writer.delete(key: key)
            written[key] = nil
        }
        #expect(await eventually(timeout: .seconds(20)) { server.statistics.valuesPacked == 999 })
        let left = server.statistics
        // Holes are compacted once they are half of the arena, past 128 KiB (two chunks).
        #expect(left.packArenaBytes <= max(2 * left.packedBytes, 128 * 1024), "\(left.packArenaBytes) bytes in the arena for \(left.packedBytes) held")
        #expect(left.packArenaBytes * 3 < full * 2, "\(full) bytes before, \(left.packArenaBytes) after")
        let reader = try await fixture.syncedAgent(["/s/"])
        #expect(reader.entries(prefix: "/s/").count == 1_000)
        for (key, value) in written { #expect(reader.get(key)?.value == value, "\(key) from a snapshot") }
    }

    @Test("a live value as long as the one held is copied over it; a reader keeps what it read, and the new value is packed in its turn")
    func liveValuesOfTheSameLengthAreCopiedOverTheHeldOnes() async throws {
        let fixture = try CloneFixture { $0.packValuesAfter = nil }
        let writer = try await fixture.syncedAgent(["/s/"]) { $0.packValuesAfter = nil }
        let reader = try await fixture.syncedAgent(["/s/"]) { $0.packValuesAfter = .milliseconds(300) }
        // The first of its shape stays whole; the second packs against it once unchanged a while.
        let reference = ValueDeltasTests.value(session: "a00000000", time: 5_000, screens: 2)
        let first = ValueDeltasTests.value(session: "a00000001", time: 5_001, screens: 2)
        let second = ValueDeltasTests.value(session: "a00000001", time: 5_002, screens: 2)
        try #require(first.count == second.count && first != second)
        let key = "/s/a00000001/vm/signin"
        try writer.set(key: "/s/a00000000/vm/signin", value: reference)
        try writer.set(key: key, value: first)
        #expect(await eventually { reader.get(key)?.value == first })
        let read = try #require(reader.get(key)).value
        let before = reader.statistics
        // Written again before it was packed: the bytes go over the held value, whose key keeps
        // its place in the packing queue.
        try writer.set(key: key, value: second)
        #expect(await eventually { reader.get(key)?.value == second })
        #expect(read == first, "the array a reader holds is its own")
        #expect(await eventually { reader.statistics.updatesAppliedInPlace > before.updatesAppliedInPlace },
                "\(reader.statistics.updatesAppliedInPlace) taken in place, \(before.updatesAppliedInPlace) before")
        #expect(await eventually { reader.packing.values == 1 }, "\(reader.packing.values) packed")
        #expect(reader.get(key)?.value == second, "packed, it reads back as the last value written")
        #expect(reader.packing.valueBytes == second.count)

        // With an observer the change is made for it, and the map takes it the same.
        let seen = Mutex<[[UInt8]]>([])
        let observation = reader.observe(prefix: "/s/", includeCurrent: false) { update in
            seen.withLock { $0.append(update.value) }
        }
        defer { observation.cancel() }
        let third = ValueDeltasTests.value(session: "a00000001", time: 5_003, screens: 2)
        try #require(third.count == first.count)
        let inPlace = reader.statistics.updatesAppliedInPlace
        try writer.set(key: key, value: third)
        #expect(await eventually { seen.withLock { $0 } == [third] })
        #expect(reader.get(key)?.value == third)
        #expect(reader.statistics.updatesAppliedInPlace == inPlace, "an observed change goes the long way")
    }

    @Test("an agent packs the values it has held unchanged a while; get, entries and a new stream see them whole")
    func agentsPackToo() async throws {
        let fixture = try CloneFixture { $0.packValuesAfter = nil }
        let writer = try await fixture.syncedAgent(["/s/"]) { $0.packValuesAfter = nil }
        let reader = try await fixture.syncedAgent(["/s/", "/v/"]) { $0.packValuesAfter = .milliseconds(50) }
        var written: [String: [UInt8]] = [:]
        for index in 0..<30 {
            let session = String(format: "a%08d", index)
            let state = ValueDeltasTests.value(session: session, time: 5_000 + index, screens: 2)
            for key in ["/v/signin/\(session)", "/s/\(session)/vm/signin"] {
                try writer.set(key: key, value: state)
                written[key] = state
            }
        }
        // All but the first of each shape (`/v/signin/`, `/s//vm/signin`).
        #expect(await eventually { reader.packing.values == 58 }, "\(reader.packing.values) of 58 values packed")
        let packing = reader.packing
        #expect(packing.valueBytes == written.filter { !$0.key.contains("a00000000") }.reduce(0) { $0 + $1.value.count })
        #expect(packing.bytes * 3 < packing.valueBytes, "\(packing.valueBytes) bytes packed to \(packing.bytes)")
        for (key, value) in written { #expect(reader.get(key)?.value == value, "\(key)") }
        #expect(Dictionary(uniqueKeysWithValues: reader.entries(prefix: "/").map { ($0.key, $0.value) }) == written)
        var streamed: [String: [UInt8]] = [:]
        for await update in reader.updates(prefix: "/v/") {
            streamed[update.key] = update.value
            if streamed.count == 30 { break }
        }
        #expect(streamed == written.filter { $0.key.hasPrefix("/v/") })

        // Written again: read whole at once, and packed again later; deleted: off the counts.
        let changed = ValueDeltasTests.value(session: "a00000000", time: 1, screens: 3)
        try writer.set(key: "/v/signin/a00000000", value: changed)
        try writer.delete(key: "/s/a00000000/vm/signin")
        // Both seen first. The first session's values were whole (the first of their shapes);
        // the new one packs against the references that are there now: 58 + 1.
        #expect(await eventually { reader.get("/v/signin/a00000000")?.value == changed && reader.get("/s/a00000000/vm/signin") == nil })
        #expect(await eventually { reader.packing.values == 59 })
        reader.keepValues { !$0.hasPrefix("/s/") }
        #expect(reader.packing.values == 30)
        #expect(reader.get("/v/signin/a00000000")?.value == changed)
    }
}
