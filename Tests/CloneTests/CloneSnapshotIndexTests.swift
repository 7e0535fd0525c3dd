import Clone
import Foundation
import Testing

/// The probe timed a snapshot at 28 ms with 40 k keys, because the server scanned every key
/// for every request. A snapshot now reads only the keys of its subtree.
@Suite("Clone snapshots by subtree")
struct CloneSnapshotIndexTests {
    @Test func aSessionsSnapshotReadsThatSessionsKeysOnly() async throws {
        let fixture = try CloneFixture()
        let writer = try await fixture.syncedAgent(["/other/"])
        let sessions = 2000
        for index in 0..<sessions {
            for leaf in ["nav", "meta", "vm/home"] { try writer.set(key: "/s/s\(index)/\(leaf)", value: "\(leaf) \(index)".bytes) }
            try writer.set(key: "/v/home/s\(index)", value: "home \(index)".bytes)
        }
        try writer.set(key: "/schema/app", value: "schema".bytes)
        #expect(await eventually(timeout: .seconds(30)) { fixture.server!.statistics.keysStored == sessions * 4 + 1 })
        func keysRead(for subtree: String) async throws -> (read: Int, map: [String: String]) {
            let before = fixture.server!.statistics.snapshotKeysRead
            let reader = try await fixture.syncedAgent([subtree])
            #expect(await eventually { fixture.server!.statistics.snapshotKeysRead > before || subtree.hasPrefix("/nothing") })
            try await Task.sleep(for: .milliseconds(20))
            defer { reader.stop() }
            return (fixture.server!.statistics.snapshotKeysRead - before, reader.textMap())
        }
        let one = try await keysRead(for: "/s/s7/")
        #expect(one.read == 3, "a one-session snapshot read \(one.read) keys")
        #expect(one.map == ["/s/s7/nav": "nav 7", "/s/s7/meta": "meta 7", "/s/s7/vm/home": "vm/home 7"])
        let deeper = try await keysRead(for: "/s/s7/vm/")
        #expect(deeper.map == ["/s/s7/vm/home": "vm/home 7"] && deeper.read == 1)
        let screens = try await keysRead(for: "/v/home/")
        #expect(screens.read == sessions && screens.map.count == sessions)
        let all = try await keysRead(for: "/s/")
        #expect(all.read == sessions * 3 && all.map.count == sessions * 3)
        let schema = try await keysRead(for: "/schema/")
        #expect(schema.map == ["/schema/app": "schema"] && schema.read == 1)
        // A deleted key leaves the index with the map.
        try writer.delete(key: "/s/s7/meta")
        #expect(await eventually { fixture.server!.statistics.keysStored == sessions * 4 })
        let after = try await keysRead(for: "/s/s7/")
        #expect(after.read == 2 && after.map.keys.sorted() == ["/s/s7/nav", "/s/s7/vm/home"])
    }
}
