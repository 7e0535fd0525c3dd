import Clone
import FlowClient
import FlowProtocol
import Foundation
import Testing

/// One Clone agent for many sessions (the simulator's): a session registered after its values
/// were written starts from them, sees none of another session's, and follows what comes after.
@Suite("Shared session feed over a real Clone server")
struct SharedSessionFeedTests {
    @Test func aSessionStartsFromItsOwnValuesAmongManyAndFollowsOnlyItsOwn() async throws {
        let bus = try await BusFixture()
        // Many sessions' values are on the bus before the feed starts, and one more after.
        for index in 0..<200 {
            try bus.publishState("other\(index)", kind: "home", phase: .success, version: 1)
        }
        try bus.publishState("s1", kind: "signin", phase: .error, version: 3, message: "Invalid e-mail or password.")
        let connection = try BusConnection(endpoints: bus.endpoints, options: BusFixture.options, logger: quietLogger)
        defer { connection.stop() }
        let feed = try await SharedSessionFeed(endpoints: bus.endpoints, context: connection.context, logger: quietLogger)
        defer { feed.stop() }
        try bus.publishState("late", kind: "home", phase: .success, version: 1)
        try await bus.serveApp(session: "s1", navigation: SessionClientTests.signin)

        let client = try await SessionClient.open(on: connection, feed: feed, options: BusFixture.options)
        defer { client.stop() }
        #expect(client.session == "s1")
        let seeded = try await client.waitUntil { $0.screen == "signin" && $0.phase == .error }
        #expect(seeded.topState?.message == "Invalid e-mail or password.")
        #expect(seeded.topState?.screenVersion == 3)

        try bus.publishState("other7", kind: "home", phase: .loading, version: 2)
        try bus.publishState("s1", kind: "signin", phase: .success, version: 4)
        _ = try await client.waitUntil { $0.phase == .success }
        // Only s1's keys reached its store.
        let keys = Set(client.events().map(\.key))
        #expect(keys.allSatisfy { $0.hasPrefix("/s/s1/") || $0.hasPrefix("/schemas/") }, "\(keys)")
        #expect(feed.sessionsFollowed == 1)
    }
}
