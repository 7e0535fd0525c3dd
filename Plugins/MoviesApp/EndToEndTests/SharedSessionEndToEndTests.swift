import FlowbusTesting
import FlowClient
import FlowHost
import Foundation
import Testing

/// Two drivers of one session acting at the same moment on the same screen version: exactly one
/// intent applies, the other is refused as stale, and both clients end on the same screen.
@Suite("Shared session", .serialized)
struct SharedSessionEndToEndTests {
    @Test("two selects on one Home version: one applied, one STALE_INTENT, one Details pushed, both views equal",
          .timeLimit(.minutes(2)), arguments: 1...3)
    func simultaneousIntents(round: Int) async throws {
        let host = try await AppJourneysEndToEndTests.startApp()
        defer { Task { try? await host.stop() } }
        let endpoints = try BusEndpoints.announced(by: RunDirectory(path: host.runDirectory))
        let first = try await SessionClient.open(endpoints)
        defer { first.stop() }
        try await first.waitUntil(timeout: .seconds(20)) { $0.screen == "signin" }
        _ = try await first.send(action: "logIn", fields: ["email": "demo@flowbus.dev", "password": "flowbus123"])
        try await first.waitUntil(timeout: .seconds(20)) { $0.screen == "home" && $0.phase == .success }
        var options = SessionClientOptions()
        options.name = "second/\(round)"
        let second = try await SessionClient.attach(first.session, endpoints: endpoints, options: options)
        defer { second.stop() }
        let version = first.view.navigationVersion
        try await second.waitUntil(timeout: .seconds(10)) { $0.navigationVersion == version && $0.screen == "home" }

        // Both made on the same navigation version, sent at once.
        let a = try first.prepare(action: "select", fields: ["item": "actor:1"])
        let b = try second.prepare(action: "select", fields: ["item": "actor:2"])
        #expect(a.version == version && b.version == version)
        async let sentA = first.send(a)
        async let sentB = second.send(b)
        let outcomes = try await [sentA, sentB]
        #expect(outcomes.filter(\.applied).count == 1, "\(outcomes)")
        let refused = try #require(outcomes.first { !$0.applied })
        #expect(refused.isStale, "\(refused)")
        #expect(refused.error?.message.isEmpty == false, "a refusal must say why")

        // One Details pushed, and both clients show it: the winner's item, never a split view.
        let winner = outcomes.first(where: \.applied)!.prepared.intent.fields["item"]!
        for client in [first, second] {
            let view = try await client.waitUntil(timeout: .seconds(10)) { $0.navigationVersion == version + 1 }
            #expect(view.stack == ["home", "details"])
            #expect(view.topScreen?.params["item"] == winner)
        }
        #expect(first.view.navigation == second.view.navigation)
    }

    /// Issue 17: `flowbus sessions` showed no count of the clients attached to a session.
    @Test("flowbus sessions counts the clients attached to each session: a driver, then an observer, then one leaves",
          .timeLimit(.minutes(2)))
    func sessionsCountTheirClients() async throws {
        let host = try await AppJourneysEndToEndTests.startApp()
        defer { Task { try? await host.stop() } }
        let endpoints = try BusEndpoints.announced(by: RunDirectory(path: host.runDirectory))
        let driver = try await SessionClient.open(endpoints)
        defer { driver.stop() }
        try await driver.waitUntil(timeout: .seconds(20)) { $0.screen == "signin" }
        let lonely = try await SessionClient.open(endpoints)
        try await lonely.waitUntil(timeout: .seconds(20)) { $0.screen == "signin" }
        lonely.stop()
        func clients() async throws -> [String: Int] {
            let listed = try await host.run(["sessions", "--json"])
            let sessions = try JSONSerialization.jsonObject(with: Data(listed.output.utf8)) as? [[String: Any]] ?? []
            return Dictionary(uniqueKeysWithValues: sessions.compactMap { entry in
                (entry["session"] as? String).map { ($0, entry["clients"] as? Int ?? -1) }
            })
        }
        let alone = try await HostFixture.eventually(timeout: .seconds(10), every: .milliseconds(200)) {
            try await clients() == [driver.session: 1, lonely.session: 0]
        }
        let listed = try await clients()
        #expect(alone, "\(listed)")
        let observer = try await SessionClient.attach(driver.session, endpoints: endpoints, announce: false)
        try await observer.waitUntil(timeout: .seconds(20)) { $0.screen == "signin" }
        let two = try await HostFixture.eventually(timeout: .seconds(10), every: .milliseconds(200)) {
            try await clients()[driver.session] == 2
        }
        let counted = try await clients()
        #expect(two, "\(counted)")
        let table = try await host.run(["sessions"])
        #expect(table.output.contains("CLIENTS"), "\(table.output)")
        observer.stop()
        let one = try await HostFixture.eventually(timeout: .seconds(10), every: .milliseconds(200)) {
            try await clients()[driver.session] == 1
        }
        let after = try await clients()
        #expect(one, "\(after)")
    }

    @Test("attaching to a session id nobody has open is refused, saying so; with create it opens one under that id",
          .timeLimit(.minutes(2)))
    func unknownSessionIsRefusedUnlessCreated() async throws {
        let host = try await AppJourneysEndToEndTests.startApp()
        defer { Task { try? await host.stop() } }
        let endpoints = try BusEndpoints.announced(by: RunDirectory(path: host.runDirectory))
        do {
            let opened = try await SessionClient.attach("typo-session", endpoints: endpoints)
            opened.stop()
            Issue.record("attaching to an unknown session opened it")
        } catch {
            #expect("\(error)".contains("no session typo-session is open"), "\(error)")
        }
        #expect(!(try await BusSnapshot.take(endpoints).sessions.contains { $0.session == "typo-session" }))
        let created = try await SessionClient.attach("typo-session", endpoints: endpoints, create: true)
        defer { created.stop() }
        try await created.waitUntil(timeout: .seconds(20)) { $0.screen == "signin" }
        #expect(created.session == "typo-session")
    }
}
