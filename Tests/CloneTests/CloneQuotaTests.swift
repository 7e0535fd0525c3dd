import Clone
import Foundation
import Testing

/// The probe wrote 200 values of 1 MiB and the host grew by 400 MiB. Writes past a session's or
/// the map's quota are refused and counted; deleting makes room again; a closed session (no
/// key left) costs nothing.
@Suite("Clone quotas")
struct CloneQuotaTests {
    @Test func writesPastASessionsQuotaAreRefusedAndDeletingMakesRoom() async throws {
        let fixture = try CloneFixture { configuration in
            configuration.maxSessionBytes = 10_000
            configuration.maxSessionKeys = 5
            configuration.maxStoreBytes = 30_000
        }
        let reader = try await fixture.syncedAgent(["/s/", "/big/"])
        let writer = try await fixture.syncedAgent(["/other/"]) { $0.confirmWrites = true }
        let kilobytes = [UInt8](repeating: 7, count: 4_000)
        // Bytes: two 4 kB values fit in 10 kB, the third does not.
        try writer.set(key: "/s/a/one", value: kilobytes)
        try writer.set(key: "/s/a/two", value: kilobytes)
        try writer.set(key: "/s/a/three", value: kilobytes)
        // Keys: five small ones fit in session b, the sixth does not.
        for index in 0..<6 { try writer.set(key: "/s/b/k\(index)", value: "x".bytes) }
        #expect(await eventually { writer.statistics.writesUnconfirmed == 0 && writer.statistics.writesConfirmed == 9 })
        try await Task.sleep(for: .milliseconds(50))
        #expect(fixture.server!.statistics.quotaRefused == 2, "\(fixture.server!.statistics)")
        #expect(reader.get("/s/a/three") == nil && reader.get("/s/a/two") != nil)
        #expect(reader.get("/s/b/k5") == nil && reader.get("/s/b/k4") != nil)
        // Replacing a value counts its new size only; deleting makes room.
        try writer.set(key: "/s/a/two", value: "small".bytes)
        try writer.set(key: "/s/a/three", value: kilobytes)
        #expect(await eventually { reader.get("/s/a/three") != nil })
        // The whole map: 30 kB.
        for index in 0..<8 { try writer.set(key: "/big/\(index)", value: kilobytes) }
        #expect(await eventually { writer.statistics.writesUnconfirmed == 0 })
        try await Task.sleep(for: .milliseconds(50))
        let statistics = fixture.server!.statistics
        #expect(statistics.storeBytes <= 30_000 && statistics.quotaRefused > 2, "\(statistics)")
        // Closing a session (deleting its keys) forgets it.
        #expect(statistics.sessions == 2)
        for index in 0..<5 { try writer.delete(key: "/s/b/k\(index)") }
        #expect(await eventually { fixture.server!.statistics.sessions == 1 })
    }
}
