import Clone
import Foundation
import Testing
import ZeroMQ

/// The clients following each session, counted by the server from its subscriptions (issue 17:
/// `flowbus sessions` showed no count of attached clients).
@Suite("Clone session followers")
struct CloneSessionFollowersTests {
    @Test("each agent of a session's subtree counts once while it follows; a wider one counts for none")
    func followersComeAndGo() async throws {
        let fixture = try CloneFixture()
        let server = try #require(fixture.server)
        let first = try await fixture.syncedAgent(["/s/abc/"])
        let second = try await fixture.syncedAgent(["/s/abc/"])
        let other = try await fixture.syncedAgent(["/s/xyz/"])
        let everything = try await fixture.syncedAgent(["/s/"])
        _ = everything
        #expect(await eventually { server.sessionFollowers == ["abc": 2, "xyz": 1] }, "\(server.sessionFollowers)")
        second.stop()
        #expect(await eventually { server.sessionFollowers == ["abc": 1, "xyz": 1] }, "\(server.sessionFollowers)")
        first.stop()
        other.stop()
        #expect(await eventually { server.sessionFollowers.isEmpty }, "\(server.sessionFollowers)")
    }
}
