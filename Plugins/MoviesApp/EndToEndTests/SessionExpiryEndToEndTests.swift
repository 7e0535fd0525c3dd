import FlowbusTesting
import FlowClient
import FlowHost
import Foundation
import Testing

/// Idle sessions on the real processes: coord.app runs with `--session-idle 2`; a connected
/// driver keeps its session with `touch`, and a session whose client left is closed with every
/// key of it deleted.
@Suite("Idle session expiry", .serialized)
struct SessionExpiryEndToEndTests {
    static func manifest(idleSeconds: Int) throws -> String {
        try manifest(extra: ["--session-idle", "\(idleSeconds)"])
    }

    /// The movies manifest with `extra` arguments for coord-app, the navigation owner.
    static func manifest(extra: [String]) throws -> String {
        try manifest(adding: extra, to: ["--coordinator", "app"])
    }

    /// The movies manifest with `extra` arguments for the plugin started with `args`.
    static func manifest(adding extra: [String], to args: [String]) throws -> String {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("manifest.yaml")
        let text = try String(contentsOf: url, encoding: .utf8)
        let quoted = { (list: [String]) in "args: [" + list.map { "\"\($0)\"" }.joined(separator: ", ") + "]" }
        try #require(text.contains(quoted(args)), "the movies manifest no longer has \(quoted(args))")
        return text.replacingOccurrences(of: quoted(args), with: quoted(args + extra))
    }

    @Test("a driver that stays is kept; a session nobody acts on is closed, saying why, and leaves no key",
          .timeLimit(.minutes(2)))
    func idleSessionsExpire() async throws {
        let host = try await AppJourneysEndToEndTests.startApp(manifest: try Self.manifest(idleSeconds: 2))
        defer { Task { try? await host.stop() } }
        let endpoints = try BusEndpoints.announced(by: RunDirectory(path: host.runDirectory))

        let kept = try await SessionClient.open(endpoints)
        defer { kept.stop() }
        var silent = SessionClientOptions()
        silent.keepAlive = false
        let left = try await SessionClient.open(endpoints, options: silent)
        defer { left.stop() }
        for client in [kept, left] {
            let view = try await client.waitUntil(timeout: .seconds(20)) { $0.screen == "signin" && $0.record != nil }
            #expect(view.record?.idleLimitSeconds == 2)
        }

        // Neither acts. The one that does not touch is closed after 2 s (the owner looks every 0.5 s).
        let closed = try await left.waitUntil(timeout: .seconds(10)) { $0.navigation == nil && $0.record == nil && $0.states.isEmpty }
        #expect(closed.closedReason == "idle for 2 s")
        let snapshot = try await BusSnapshot.take(endpoints)
        #expect(!snapshot.sessions.contains { $0.session == left.session })
        #expect(!snapshot.instances.contains { $0.session == left.session })

        // Several limits later the driver's session is still open, on the same screen.
        try await Task.sleep(for: .seconds(5))
        #expect(kept.view.closedReason == nil)
        #expect(kept.view.screen == "signin")
        #expect(try await BusSnapshot.take(endpoints).sessions.contains { $0.session == kept.session })
        // And it still works.
        _ = try await kept.send(action: "logIn", fields: ["email": "demo@flowbus.dev", "password": "flowbus123"])
        try await kept.waitUntil(timeout: .seconds(20)) { $0.screen == "home" }
    }
}
