import FlowClient
import FlowHost
import FlowProtocol
import Foundation
import Testing

/// The Photos app as real processes: `flowbus up --app photos` (services, seven view-model
/// workers, three coordinators), driven over the real bus by the same Journey that `flowbus drive`
/// runs, with the scripts of Plugins/Photos/Journeys.
@Suite("Photos app end to end", .serialized)
struct PhotosJourneysEndToEndTests {
    static func journey(on host: PhotosHost, name: String = "test") throws -> Journey {
        var options = SessionClientOptions()
        options.name = "\(name)/\(UUID().uuidString.prefix(6))"
        options.followCoordinators = true
        // A ceiling for each step, not a timing assertion: a restart on a loaded machine may take a while.
        return Journey(endpoints: try host.endpoints, options: options, defaultTimeout: .seconds(20))
    }

    /// Plays a script of Plugins/Photos/Journeys; fails the test with the failing step's diff.
    @discardableResult
    static func play(_ name: String, on journey: Journey) async throws -> JourneyReport {
        let script = try DriveScript.load(path: PhotosHost.journeys.appendingPathComponent(name).path)
        let report = await journey.run(script)
        let failure = report.steps.last { !$0.passed }?.failure ?? ""
        #expect(report.passed, "\(name) failed:\n\(failure)")
        #expect(report.steps.count == script.steps.count)
        return report
    }

    /// Every state sequence is ordered: versions only grow, and each `loading` is followed by the
    /// `success` or `error` of the next version.
    static func checkStateOrder(_ events: [SessionEvent], sourceLocation: SourceLocation = #_sourceLocation) {
        var states: [String: [(phase: ScreenPhase, version: UInt64)]] = [:]
        for event in events {
            if case .state(let screen, let phase, let version, _, _) = event.kind { states[screen, default: []].append((phase, version)) }
        }
        for (kind, sequence) in states {
            for (earlier, later) in zip(sequence, sequence.dropFirst()) {
                #expect(later.version > earlier.version, "\(kind): v\(later.version) came after v\(earlier.version)", sourceLocation: sourceLocation)
                if earlier.phase == .loading {
                    #expect(later.phase == .success || later.phase == .error, "\(kind): \(later.phase) followed loading", sourceLocation: sourceLocation)
                }
            }
        }
    }

    static let scripts = ["create-account-to-likes.yaml", "demo-log-in.yaml", "forgot-password-from-login.yaml", "forgot-password-from-welcome.yaml"]

    @Test("every journey of Plugins/Photos/Journeys plays through", .timeLimit(.minutes(3)), arguments: scripts)
    func journeys(script: String) async throws {
        let host = try await PhotosHost.start()
        defer { Task { try? await host.stop() } }
        let journey = try Self.journey(on: host)
        defer { journey.stop() }
        let report = try await Self.play(script, on: journey)
        guard report.passed, let client = journey.client else { return }
        Self.checkStateOrder(client.events())
        // A closed session leaves no coordinator instance behind.
        #expect(try await PhotosHost.eventually(timeout: .seconds(10)) { try await host.coordinatorInstances(of: client.session).isEmpty })
    }

    @Test("log out finishes Browse: only app and a fresh Authentication remain, and the signed-in screens are reset",
          .timeLimit(.minutes(2)))
    func logOutLeavesNoBrowseBehind() async throws {
        let host = try await PhotosHost.start()
        defer { Task { try? await host.stop() } }
        let journey = try Self.journey(on: host)
        defer { journey.stop() }
        let client = try await journey.open()
        try await journey.expect(Expectation(screen: "welcome", coordinators: ["app", "authentication"]))
        let firstAuthentication = try #require(client.view.coordinators["authentication"]?.instance.startedAtUnixNanos)
        try await journey.send("logIn")
        try await journey.send("logIn", fields: ["email": "demo@photos.dev", "password": "photos123"], screen: "login")
        try await journey.expect(Expectation(screen: "browse", phase: .success, user: "demo@photos.dev", coordinators: ["app", "browse"]))
        #expect(try await host.coordinatorInstances(of: client.session) == ["app", "browse"])
        try await journey.send("selectTab", fields: ["tab": "profile"])
        try await journey.expect(Expectation(screen: "profile", phase: .success))
        try await journey.send("logOut")
        try await journey.expect(Expectation(screen: "welcome", stack: ["welcome"], user: "", coordinators: ["app", "authentication"]))
        let secondAuthentication = try #require(client.view.coordinators["authentication"]?.instance.startedAtUnixNanos)
        #expect(secondAuthentication > firstAuthentication, "the Authentication on screen is the one from before the log-in")
        #expect(try await host.coordinatorInstances(of: client.session) == ["app", "authentication"])
        for kind in ["browse", "likes", "profile"] {
            #expect(client.view.states[kind].map { $0.phase == .none } ?? true, "\(kind) kept a state after log-out")
        }
        try await journey.close()
    }

    @Test("two clients on one session see the same screens; of two selects on one version one applies", .timeLimit(.minutes(2)))
    func twoClientsOneSession() async throws {
        let host = try await PhotosHost.start()
        defer { Task { try? await host.stop() } }
        let first = try Self.journey(on: host, name: "first")
        defer { first.stop() }
        let second = try Self.journey(on: host, name: "second")
        defer { second.stop() }
        let one = try await first.open()
        try await first.send("logIn", screen: "welcome")
        try await first.send("logIn", fields: ["email": "demo@photos.dev", "password": "photos123"], screen: "login")
        try await first.expect(Expectation(screen: "browse", phase: .success))
        let two = try await second.attach(one.session)
        try await second.expect(Expectation(screen: "browse", tab: "browse", phase: .success))

        // The second client opens a photo and likes it; the first sees both.
        try await second.send("select", fields: ["photo": "photo:5"])
        try await first.expect(Expectation(screen: "photo", stack: ["browse", "photo"], phase: .success).with(data: ["id": "photo:5"]))
        try await second.expect(Expectation(screen: "photo", phase: .success))
        try await second.send("like")
        try await first.expect(Expectation(screen: "photo", phase: .success).with(data: ["id": "photo:5", "liked": "true"]))
        try await first.send("back")
        try await second.expect(Expectation(screen: "browse", stack: ["browse"], phase: .success))
        // The reply to `back` may come before the first client's copy of the navigation does.
        try await first.expect(Expectation(screen: "browse", stack: ["browse"]))

        // Both act at once on the same navigation version: exactly one select applies.
        let version = one.view.navigationVersion
        _ = try await two.waitUntil(timeout: .seconds(10)) { $0.navigationVersion == version }
        let a = try one.prepare(action: "select", fields: ["photo": "photo:1"])
        let b = try two.prepare(action: "select", fields: ["photo": "photo:2"])
        async let sentA = one.send(a)
        async let sentB = two.send(b)
        let outcomes = try await [sentA, sentB]
        #expect(outcomes.filter(\.applied).count == 1, "\(outcomes)")
        #expect(outcomes.first { !$0.applied }?.isStale == true, "\(outcomes)")
        for client in [one, two] {
            let view = try await client.waitUntil(timeout: .seconds(10)) { $0.navigationVersion == version + 1 }
            #expect(view.stack == ["browse", "photo"])
        }
        #expect(one.view.navigation == two.view.navigation)
        try await first.close()
    }

    @Test("kill -9 of coord-browse mid-journey: restarted once, it carries on with the session; log out still ends Browse",
          .timeLimit(.minutes(3)))
    func browseCoordinatorKilledMidJourney() async throws {
        let host = try await PhotosHost.start()
        defer { Task { try? await host.stop() } }
        let journey = try Self.journey(on: host)
        defer { journey.stop() }
        let client = try await journey.open()
        try await journey.send("logIn", screen: "welcome")
        try await journey.send("logIn", fields: ["email": "demo@photos.dev", "password": "photos123"], screen: "login")
        try await journey.expect(Expectation(screen: "browse", phase: .success, coordinators: ["app", "browse"]))
        try await journey.send("select", fields: ["photo": "photo:1"])
        try await journey.expect(Expectation(screen: "photo", stack: ["browse", "photo"], phase: .success))
        try await journey.send("back")
        try await journey.expect(Expectation(screen: "browse", stack: ["browse"], phase: .success))

        // Kill coord-browse, then at once select: the intent waits at the broker (or is retried
        // with its idempotency key) until the new incarnation, rebuilt from /c/browse/, serves it.
        let plugin = try #require(try await host.plugins().first { $0["name"] as? String == "coord-browse" })
        let pid = try #require((plugin["pid"] as? Int).map(Int32.init))
        #expect(kill(pid, SIGKILL) == 0)
        try await journey.send("select", fields: ["photo": "photo:2"])
        let view = try await journey.expect(Expectation(screen: "photo", stack: ["browse", "photo"], phase: .success).with(data: ["id": "photo:2"]))
        #expect(view.topScreen?.id == "photo-2")
        var last: [String: Any]?
        let back = try await PhotosHost.eventually(timeout: .seconds(20), every: .milliseconds(100)) {
            last = try await host.plugins().first { $0["name"] as? String == "coord-browse" }
            return last?["state"] as? String == "running" && (last?["pid"] as? Int).map(Int32.init) != pid
        }
        #expect(back, "coord-browse was not restarted: \(String(describing: last))")
        #expect(last?["restarts"] as? Int == 1)

        // The restarted Browse still watches Profile: log out reaches the root and ends Browse.
        try await journey.send("selectTab", fields: ["tab": "profile"])
        try await journey.expect(Expectation(screen: "profile", phase: .success))
        try await journey.send("logOut")
        try await journey.expect(Expectation(screen: "welcome", user: "", coordinators: ["app", "authentication"]))
        #expect(try await host.coordinatorInstances(of: client.session) == ["app", "authentication"])

        // No screen was pushed twice: the Browse stack never held more than two screens.
        for event in client.events() {
            guard case .navigation(let version, _, let stack, let tab, _) = event.kind, tab == "browse" else { continue }
            #expect(stack.count <= 2, "the Browse stack grew to \(stack) at v\(version)")
        }
        Self.checkStateOrder(client.events())
    }
}

extension FlowClient.Expectation {
    /// The expectation, also checking these values of the state's payload (`DataPath`s).
    func with(data: [String: String]) -> FlowClient.Expectation {
        var expectation = self
        expectation.data = data
        return expectation
    }
}
