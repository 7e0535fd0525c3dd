import FlowbusTesting
import FlowClient
import FlowHost
import FlowProtocol
import Foundation
import Logging
import Testing

/// The whole movies app of APP.md as real processes: `flowbus up` with the package's default app
/// (services, eleven view-model workers, seven coordinators), driven over the real bus by the same
/// Journey that `flowbus drive` runs, with the scripts of Plugins/MoviesApp/Journeys.
@Suite("App journeys end to end", .serialized)
struct AppJourneysEndToEndTests {
    static let journeys = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Journeys")

    /// A host running the default manifest, once every app service has a worker.
    /// The movies app as `flowbus up` runs it, or with `manifest` (the app's manifest, changed).
    static func startApp(manifest: String? = nil, arguments: [String] = []) async throws -> HostFixture {
        let host = try await HostFixture.start(manifest: manifest, arguments: arguments)
        let services = ["svc.users", "svc.genres", "svc.movies", "svc.mail", "svc.expenses"]
            + ["signin", "signup", "emailverification", "forgotpassword", "resetpassword", "home", "details", "likes", "settings", "changepassword", "expenses"].map { "vm.\($0)" }
            + ["app", "auth", "signup", "main", "home", "settings", "expenses"].map { "coord.\($0)" }
        let ready = await HostFixture.eventually(timeout: .seconds(30), every: .milliseconds(100)) {
            let workers = (await host.statusIfAnswered()?["broker"] as? [String: Any])?["workersPerService"] as? [String: Int] ?? [:]
            return services.allSatisfy { (workers[$0] ?? 0) > 0 }
        }
        if !ready {
            try? await host.stop()
            Issue.record("the app's workers did not all register:\n\(host.hostLog)")
            throw CancellationError()
        }
        return host
    }

    /// A journey on `host`'s bus; `adjust` changes its client's options (tries, timeouts).
    static func journey(on host: HostFixture, adjust: (inout SessionClientOptions) -> Void = { _ in }) throws -> Journey {
        var options = SessionClientOptions()
        options.name = "test/\(UUID().uuidString.prefix(6))"
        options.followCoordinators = true
        adjust(&options)
        // A ceiling for each step, not a timing assertion: a restart under a loaded machine may take a while.
        return Journey(
            endpoints: try BusEndpoints.announced(by: RunDirectory(path: host.runDirectory)), options: options,
            defaultTimeout: .seconds(20))
    }

    /// Plays a script of Plugins/MoviesApp/Journeys; fails the test with the failing step's diff.
    static func play(_ name: String, on journey: Journey) async throws -> JourneyReport {
        let script = try DriveScript.load(path: journeys.appendingPathComponent(name).path)
        let report = await journey.run(script)
        let failure = report.steps.last { !$0.passed }?.failure ?? ""
        #expect(report.passed, "\(name) failed:\n\(failure)")
        #expect(report.steps.count == script.steps.count)
        return report
    }

    /// Per screen kind, the states in the order this client saw them.
    static func states(_ events: [SessionEvent]) -> [String: [(phase: ScreenPhase, version: UInt64)]] {
        var states: [String: [(phase: ScreenPhase, version: UInt64)]] = [:]
        for event in events {
            if case .state(let screen, let phase, let version, _, _) = event.kind { states[screen, default: []].append((phase, version)) }
        }
        return states
    }

    /// Every state sequence is ordered: versions only grow, and each `loading` is followed by the
    /// `success` or `error` of the next version (nothing else of that screen in between).
    static func checkStateOrder(_ events: [SessionEvent], sourceLocation: SourceLocation = #_sourceLocation) {
        for (kind, sequence) in states(events) {
            for (earlier, later) in zip(sequence, sequence.dropFirst()) {
                #expect(later.version > earlier.version, "\(kind): v\(later.version) came after v\(earlier.version)", sourceLocation: sourceLocation)
                if earlier.phase == .loading {
                    #expect(later.phase == .success || later.phase == .error, "\(kind): \(later.phase) v\(later.version) followed loading v\(earlier.version)", sourceLocation: sourceLocation)
                    #expect(later.version == earlier.version + 1, "\(kind): loading v\(earlier.version) was followed by v\(later.version)", sourceLocation: sourceLocation)
                }
            }
        }
    }

    /// The phases a screen kind went through, e.g. [loading, success, loading, success].
    static func phases(_ kind: String, _ events: [SessionEvent]) -> [ScreenPhase] {
        (states(events)[kind] ?? []).map(\.phase).filter { $0 != .none }
    }

    @Test("sign-up → outbox token → verify → Home → actor → movie → like → Likes → Details → Settings → change password → log out → sign in again",
          .timeLimit(.minutes(3)))
    func signUpToNewPassword() async throws {
        let host = try await Self.startApp()
        defer { Task { try? await host.stop() } }
        let journey = try Self.journey(on: host)
        defer { journey.stop() }
        let report = try await Self.play("signup-to-new-password.yaml", on: journey)
        guard report.passed else { return }
        let events = try #require(journey.client).events()
        Self.checkStateOrder(events)
        // The genre list loads on appear; each data action goes loading → success.
        #expect(Self.phases("signup", events).prefix(2) == [.loading, .success])
        #expect(Self.phases("home", events).prefix(2) == [.loading, .success])
        #expect(Self.phases("changepassword", events) == [.loading, .success])
        #expect(Self.phases("signin", events) == [.loading, .error, .loading, .success])
        // Sign-in with the old password was refused with the app's exact message.
        let messages = events.compactMap { event -> String? in
            if case .state("signin", .error, _, let message, _) = event.kind { return message }
            return nil
        }
        #expect(messages == ["Invalid e-mail or password."])
    }

    @Test("after log-out only the app coordinator and a fresh Auth flow remain for the session", .timeLimit(.minutes(2)))
    func logOutLeavesNoFlowBehind() async throws {
        let host = try await Self.startApp()
        defer { Task { try? await host.stop() } }
        let journey = try Self.journey(on: host)
        defer { journey.stop() }
        let client = try await journey.open()
        try await journey.expect(Expectation(screen: "signin", coordinators: ["app", "auth"]))
        let firstAuth = try #require(client.view.coordinators["auth"]?.instance.startedAtUnixNanos)
        try await journey.send("logIn", fields: ["email": "demo@flowbus.dev", "password": "flowbus123"])
        try await journey.expect(Expectation(screen: "home", phase: .success, coordinators: ["app", "main", "home", "settings", "expenses"]))
        try await journey.send("selectTab", fields: ["tab": "settings"])
        try await journey.expect(Expectation(screen: "settings", phase: .success))
        try await journey.send("logOut")
        try await journey.expect(Expectation(screen: "signin", user: "", coordinators: ["app", "auth"]))
        // The Auth instance on screen now started after the log-out: the one from before ended.
        let secondAuth = try #require(client.view.coordinators["auth"]?.instance.startedAtUnixNanos)
        #expect(secondAuth > firstAuth)
        let listed = try await host.run(["ps", "--sessions", "--json"])
        #expect(listed.status == 0, "\(listed.output)")
        let status = try #require(try JSONSerialization.jsonObject(with: Data(listed.output.utf8)) as? [String: Any])
        let instances = try #require(status["coordinatorInstances"] as? [[String: Any]])
        let live = instances.filter { $0["session"] as? String == client.session }.compactMap { $0["coordinator"] as? String }.sorted()
        #expect(live == ["app", "auth"], "flowbus ps --sessions lists \(live) for \(client.session)")
        // The view models of the screens that left were reset (nothing of the signed-in user stays).
        for kind in ["home", "settings"] {
            #expect(client.view.states[kind].map { $0.phase == .none } ?? true, "\(kind) kept a state after log-out")
        }
    }

    /// Issue 17, bug 10: the reset mail said "ask an operator"; its code now chooses a new password.
    @Test("forgot password: each invalid e-mail, the mailed code, a new password chosen with it, the old one refused",
          .timeLimit(.minutes(2)))
    func forgotPassword() async throws {
        let host = try await Self.startApp()
        defer { Task { try? await host.stop() } }
        let journey = try Self.journey(on: host)
        defer { journey.stop() }
        let report = try await Self.play("forgot-password.yaml", on: journey)
        guard report.passed else { return }
        Self.checkStateOrder(try #require(journey.client).events())
    }

    @Test("expense report: each invalid input, three expenses, the total in reais, register, a fresh report", .timeLimit(.minutes(2)))
    func expenseReport() async throws {
        let host = try await Self.startApp()
        defer { Task { try? await host.stop() } }
        let journey = try Self.journey(on: host)
        defer { journey.stop() }
        let report = try await Self.play("expense-report.yaml", on: journey)
        guard report.passed else { return }
        let events = try #require(journey.client).events()
        Self.checkStateOrder(events)
        let messages = events.compactMap { event -> String? in
            if case .state("expenses", .error, _, let message, _) = event.kind { return message }
            return nil
        }
        #expect(messages == [
            "O relatório não tem despesas com valor. Adicione ao menos uma despesa antes de registrar.",
            "Título inválido", "Tipo de despesa inválido", "Valor inválido",
        ])
    }

    @Test("closing a session leaves nothing of it in the Clone map: navigation, record, states, coordinator instances",
          .timeLimit(.minutes(2)))
    func closingLeavesNothing() async throws {
        let host = try await Self.startApp()
        defer { Task { try? await host.stop() } }
        let journey = try Self.journey(on: host)
        defer { journey.stop() }
        // The expense journey signs in, visits several screens and ends by closing the session.
        let report = try await Self.play("expense-report.yaml", on: journey)
        guard report.passed else { return }
        let session = try #require(report.session)
        let endpoints = try BusEndpoints.announced(by: RunDirectory(path: host.runDirectory))
        var left: [String] = []
        let gone = try await HostFixture.eventually(timeout: .seconds(10), every: .milliseconds(200)) {
            left = try await BusSnapshot.keys(endpoints, subtrees: ["/s/\(session)/", "/v/", "/c/"])
                .filter { $0.hasPrefix("/s/\(session)/") || $0.hasSuffix("/\(session)") }
            return left.isEmpty
        }
        #expect(gone, "keys of the closed session \(session) are still in the map: \(left)")
    }

    @Test("kill -9 of the Home and App coordinators mid-journey: restarted, the journey completes, no screen pushed twice",
          .timeLimit(.minutes(3)))
    func coordinatorsKilledMidJourney() async throws {
        let host = try await Self.startApp()
        defer { Task { try? await host.stop() } }
        let journey = try Self.journey(on: host)
        defer { journey.stop() }
        let client = try await Self.openSignedIn(journey)
        try await journey.send("select", fields: ["item": "actor:1"])
        try await journey.expect(Expectation(screen: "details", stack: ["home", "details"], phase: .success))

        // Kill coord-home, then at once select a movie of the filmography: the intent waits at the
        // broker (or is retried with its idempotency key) until the new incarnation serves it.
        let home = try await Self.kill("coord-home", on: host)
        try await journey.send("select", fields: ["item": "movie:19"])
        var view = try await journey.expect(Expectation(screen: "details", stack: ["home", "details", "details"], phase: .success))
        #expect(DataPath.values(of: "details.item.id", in: view.payload(of: view.topState)) == ["movie:19"])
        try await Self.restarted("coord-home", was: home, on: host)

        // Kill coord-app, the navigation owner, then like (a view-model action) and change tab (its own).
        let app = try await Self.kill("coord-app", on: host)
        try await journey.send("like")
        try await journey.expect(Expectation(screen: "details", phase: .success))
        #expect(DataPath.values(of: "details.liked", in: client.view.payload(of: client.view.topState)) == ["true"])
        try await journey.send("selectTab", fields: ["tab": "likes"])
        try await journey.expect(Expectation(screen: "likes", tab: "likes", phase: .success))
        try await Self.restarted("coord-app", was: app, on: host)
        #expect(DataPath.values(of: "items.items.*.id", in: client.view.payload(of: client.view.topState)).contains("movie:19"))

        // The Home tab kept its stack through both restarts; back pops exactly one screen.
        try await journey.send("selectTab", fields: ["tab": "home"])
        view = try await journey.expect(Expectation(screen: "details", tab: "home", stack: ["home", "details", "details"]))
        try await journey.send("back")
        try await journey.expect(Expectation(screen: "details", stack: ["home", "details"]))
        try await journey.send("selectTab", fields: ["tab": "settings"])
        try await journey.expect(Expectation(screen: "settings", phase: .success))
        try await journey.send("logOut")
        try await journey.expect(Expectation(screen: "signin", user: "", coordinators: ["app", "auth"]))

        // No screen was pushed twice: the Home stack never held more than three screens, and each
        // navigation value the client saw has a version one above the one before it or later.
        let events = client.events()
        var versions: [UInt64] = []
        for event in events {
            guard case .navigation(let version, _, let stack, let tab, _) = event.kind else { continue }
            versions.append(version)
            if tab == "home" { #expect(stack.count <= 3, "the Home stack grew to \(stack) at v\(version)") }
        }
        #expect(versions == versions.sorted() && Set(versions).count == versions.count, "navigation versions: \(versions)")
        #expect(events.filter { if case .navigation(_, _, ["home", "details", "details"], "home", _) = $0.kind { true } else { false } }.count >= 1)
        Self.checkStateOrder(events)
    }

    /// Opens a session and signs in with the demo account, on Home.
    static func openSignedIn(_ journey: Journey) async throws -> SessionClient {
        let client = try await journey.open()
        try await journey.send("logIn", fields: ["email": "demo@flowbus.dev", "password": "flowbus123"])
        try await journey.expect(Expectation(screen: "home", phase: .success))
        return client
    }

    /// The pid of the plugin `name` now, if it runs.
    static func pid(of name: String, on host: HostFixture) async throws -> Int32? {
        (try await host.plugins().first { $0["name"] as? String == name }?["pid"] as? Int).map(Int32.init)
    }

    /// Sends `signal` (SIGKILL by default) to the plugin `name`; returns its pid.
    static func kill(_ name: String, on host: HostFixture, signal: Int32 = SIGKILL) async throws -> Int32 {
        let pid = try #require(try await pid(of: name, on: host), "\(name) is not running")
        #expect(Foundation.kill(pid, signal) == 0)
        return pid
    }

    /// Waits until the host has restarted `name` under a new pid, once.
    static func restarted(_ name: String, was pid: Int32, on host: HostFixture) async throws {
        var last: [String: Any]?
        let back = try await HostFixture.eventually(timeout: .seconds(20), every: .milliseconds(100)) {
            last = try await host.plugins().first { $0["name"] as? String == name }
            return last?["state"] as? String == "running" && (last?["pid"] as? Int).map(Int32.init) != pid
        }
        #expect(back, "\(name) was not restarted: \(String(describing: last))")
        #expect(last?["restarts"] as? Int == 1)
    }
}
