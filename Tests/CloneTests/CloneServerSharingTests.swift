import Clone
import Foundation
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
        let fixture = try CloneFixture()
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
}
