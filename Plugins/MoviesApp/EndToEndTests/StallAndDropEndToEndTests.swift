import FlowbusTesting
import FlowClient
import FlowHost
import FlowProtocol
import Foundation
import MoviesApp
import Testing

/// The probe's stall and drop cases on the real movies host: a plugin stopped (SIGSTOP) for 5 s
/// in the middle of an action, and a share of the requests to `coord.app` or of the writes to
/// `/s/` lost. Every journey completes and every intent is applied once: a retry is answered
/// with the first outcome (never "not applied"), lost internal calls and Clone writes are sent
/// again, and a busy worker keeps heart-beating.
@Suite("Stalls and drops end to end", .serialized)
struct StallAndDropEndToEndTests {
    /// Stops `name` now and lets it go on after `duration`; returns its pid.
    static func stall(_ name: String, on host: HostFixture, for duration: Duration) async throws -> Int32 {
        let pid = try await AppJourneysEndToEndTests.kill(name, on: host, signal: SIGSTOP)
        Task.detached {
            try? await Task.sleep(for: duration)
            kill(pid, SIGCONT)
        }
        return pid
    }

    @Test("SIGSTOP 5 s of a coordinator, a view model, the services and the navigation owner, each mid-action: every action applied once",
          .timeLimit(.minutes(4)))
    func stoppedPluginsMidJourney() async throws {
        let host = try await AppJourneysEndToEndTests.startApp()
        defer { Task { try? await host.stop() } }
        let journey = try AppJourneysEndToEndTests.journey(on: host)
        defer { journey.stop() }
        let client = try await AppJourneysEndToEndTests.openSignedIn(journey)
        let pids = (
            home: try await AppJourneysEndToEndTests.pid(of: "coord-home", on: host), details: try await AppJourneysEndToEndTests.pid(of: "vm-details", on: host),
            services: try await AppJourneysEndToEndTests.pid(of: "services", on: host), app: try await AppJourneysEndToEndTests.pid(of: "coord-app", on: host))

        // A coordinator: `select` goes to coord.home, stopped while the intent is on its way.
        _ = try await Self.stall("coord-home", on: host, for: .seconds(5))
        let select = try await journey.send("select", fields: ["item": "actor:1"])
        #expect(select.applied, "\(select)")
        try await journey.expect(Expectation(screen: "details", stack: ["home", "details"], phase: .success))

        // A view model and the services behind it: `like` goes to vm.details, which calls svc.movies.
        _ = try await Self.stall("vm-details", on: host, for: .seconds(5))
        try await journey.send("select", fields: ["item": "movie:19"])
        try await journey.expect(Expectation(screen: "details", stack: ["home", "details", "details"], phase: .success))
        _ = try await Self.stall("services", on: host, for: .seconds(5))
        try await journey.send("like")
        var liked = Expectation(screen: "details", phase: .success)
        liked.data = ["details.liked": "true"]
        try await journey.expect(liked)

        // The navigation owner, stopped while a tab change (its own action) is on its way.
        _ = try await Self.stall("coord-app", on: host, for: .seconds(5))
        try await journey.send("selectTab", fields: ["tab": "likes"])
        try await journey.expect(Expectation(screen: "likes", tab: "likes", phase: .success))
        // Liked once: one item in the list.
        #expect(DataPath.values(of: "items.items.*.id", in: client.view.payload(of: client.view.topState)) == ["movie:19"])

        // Back on Home, the stack holds what was pushed, each screen once.
        try await journey.send("selectTab", fields: ["tab": "home"])
        try await journey.expect(Expectation(screen: "details", tab: "home", stack: ["home", "details", "details"]))
        try await journey.send("back")
        try await journey.expect(Expectation(screen: "details", stack: ["home", "details"]))

        // Each navigation the client saw is one change after another: nothing was applied twice.
        let events = client.events()
        var versions: [UInt64] = []
        for event in events {
            guard case .navigation(let version, _, let stack, let tab, _) = event.kind else { continue }
            versions.append(version)
            if tab == "home" { #expect(stack.count <= 3, "the Home stack grew to \(stack) at v\(version)") }
        }
        #expect(versions == versions.sorted() && Set(versions).count == versions.count, "navigation versions: \(versions)")
        AppJourneysEndToEndTests.checkStateOrder(events)
        // A 5 s stop is a stall, not a death: the same processes serve on.
        #expect(try await AppJourneysEndToEndTests.pid(of: "coord-home", on: host) == pids.home)
        #expect(try await AppJourneysEndToEndTests.pid(of: "vm-details", on: host) == pids.details)
        #expect(try await AppJourneysEndToEndTests.pid(of: "services", on: host) == pids.services)
        #expect(try await AppJourneysEndToEndTests.pid(of: "coord-app", on: host) == pids.app)
    }

    /// The movies manifest with a shorter liveness, so a hung plugin is found in seconds.
    static func manifest(liveness: String) throws -> String {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("manifest.yaml")
        let text = try String(contentsOf: url, encoding: .utf8)
        let from = "  shutdown_timeout: 5s\n"
        try #require(text.contains(from), "the movies manifest no longer sets the supervisor's shutdown_timeout to 5s")
        return text.replacingOccurrences(of: from, with: from + "  liveness: \(liveness)\n")
    }

    @Test("a coordinator stopped past its liveness is killed and restarted; the action waiting on it is applied once",
          .timeLimit(.minutes(3)))
    func hungPluginIsKilledAndRestarted() async throws {
        let host = try await AppJourneysEndToEndTests.startApp(manifest: try Self.manifest(liveness: "3s"))
        defer { Task { try? await host.stop() } }
        let journey = try AppJourneysEndToEndTests.journey(on: host)
        defer { journey.stop() }
        let client = try await AppJourneysEndToEndTests.openSignedIn(journey)
        // Stopped for good (no SIGCONT): only the supervisor can get the session going again.
        let pid = try await AppJourneysEndToEndTests.kill("coord-home", on: host, signal: SIGSTOP)
        let select = try await journey.send("select", fields: ["item": "actor:1"])
        #expect(select.applied, "\(select)")
        try await journey.expect(Expectation(screen: "details", stack: ["home", "details"], phase: .success))
        let now = try #require(try await host.plugins().first { $0["name"] as? String == "coord-home" })
        #expect((now["pid"] as? Int).map(Int32.init) != pid)
        #expect(now["hangs"] as? Int == 1 && now["restarts"] as? Int == 1, "\(now)")
        #expect(now["lastExitReason"] as? String == "killed by signal 9 (SIGKILL)")
        #expect(host.hostLog.contains("coord-home[0] is alive but its workers have been silent on the bus"))
        try await journey.send("back")
        try await journey.expect(Expectation(screen: "home", stack: ["home"]))
        let versions = client.events().compactMap { event -> UInt64? in
            if case .navigation(let version, _, _, _, _) = event.kind { return version }
            return nil
        }
        #expect(versions == versions.sorted() && Set(versions).count == versions.count, "navigation versions: \(versions)")
    }

    /// Plays `scripts` side by side, each on a journey of its own; returns how many passed. A
    /// failed journey's timeline (`flowbus trace`) goes with the failure.
    static func playTogether(_ scripts: [String], on host: HostFixture) async throws -> Int {
        let reports = try await withThrowingTaskGroup(of: JourneyReport.self) { group in
            for script in scripts {
                let journey = try AppJourneysEndToEndTests.journey(on: host)
                group.addTask {
                    defer { journey.stop() }
                    return try await AppJourneysEndToEndTests.play(script, on: journey)
                }
            }
            var reports: [JourneyReport] = []
            for try await report in group { reports.append(report) }
            return reports
        }
        for report in reports where !report.passed {
            if let session = report.session {
                let trace = try await host.run(["trace", session])
                Issue.record("timeline of the failed journey \(session):\n\(trace.output)")
            }
        }
        return reports.filter(\.passed).count
    }

    /// A view model killed while its `like` call to svc.movies is on the way (held 2 s at the
    /// broker): the client's retry (same key) runs the like again on the new process, and its
    /// call carries the key the first one had (`ServiceCallKeys`), so svc.movies answers it
    /// rather than toggling twice. With a fresh key per try the movie would end up not liked.
    @Test("like interrupted by kill -9 of vm-details mid-call: the retry re-runs it and the toggle is applied once", .timeLimit(.minutes(3)))
    func likeInterruptedByAKillIsAppliedOnce() async throws {
        let host = try await AppJourneysEndToEndTests.startApp()
        defer { Task { try? await host.stop() } }
        let journey = try AppJourneysEndToEndTests.journey(on: host)
        defer { journey.stop() }
        _ = try await AppJourneysEndToEndTests.openSignedIn(journey)
        try await journey.send("select", fields: ["item": "movie:19"])
        try await journey.expect(Expectation(screen: "details", stack: ["home", "details"], phase: .success))
        let held = try await host.run(["fault", "delay", "--service", "svc.movies", "--method", "like", "--ms", "2000", "--limit", "1"])
        try #require(held.status == 0, "\(held.output)")

        let details = try #require(try await AppJourneysEndToEndTests.pid(of: "vm-details", on: host))
        let killer = Task.detached {
            try await Task.sleep(for: .milliseconds(500))
            return kill(details, SIGKILL)
        }
        let reply = try await journey.send("like", timeout: .seconds(30))
        #expect(try await killer.value == 0)
        #expect(reply.applied, "\(reply)")
        try await AppJourneysEndToEndTests.restarted("vm-details", was: details, on: host)
        var liked = Expectation(screen: "details", phase: .success)
        liked.data = ["details.liked": "true"]
        try await journey.expect(liked, timeout: .seconds(20))
        // The held first call reaches svc.movies by now; it must not have toggled the like back.
        let rules = try #require(try await host.status()["faults"] as? [[String: Any]])
        #expect(rules.first.flatMap { $0["fired"] as? Int } == 1, "the first like call was not held: \(rules)")
        try await Task.sleep(for: .seconds(3))
        let likes = try await journey.call("svc.movies", method: "likes", args: ["user": "demo@flowbus.dev"], timeout: .seconds(10))
        let ids = try Movies_V1_ItemList(serializedBytes: likes.payload).items.map(\.id)
        #expect(ids == ["movie:19"], "the like was applied \(ids.isEmpty ? "twice (toggled back)" : "as \(ids)")")
        if ids != ["movie:19"], let session = journey.client?.session {
            Issue.record("the session's timeline:\n\(try await host.run(["trace", session]).output)")
        }
    }

    /// A coordinator answers only once its writes are in the Clone server: a caller told "done"
    /// does not ask again, so a kill right after the answer must not lose them. Here the owner's
    /// navigation write is dropped three times (resent at 200, 600 and 1,400 ms): when the
    /// answer comes, a snapshot of the server already holds the new tab.
    @Test("a coordinator's answer comes after its navigation write is confirmed, not before", .timeLimit(.minutes(3)))
    func answersWaitForConfirmedWrites() async throws {
        let host = try await AppJourneysEndToEndTests.startApp()
        defer { Task { try? await host.stop() } }
        let journey = try AppJourneysEndToEndTests.journey(on: host)
        defer { journey.stop() }
        let client = try await AppJourneysEndToEndTests.openSignedIn(journey)
        let dropped = try await host.run(["fault", "drop", "--key", "/s/\(client.session)/nav", "--limit", "3"])
        try #require(dropped.status == 0, "\(dropped.output)")
        let started = ContinuousClock.now
        let outcome = try await journey.send("selectTab", fields: ["tab": "likes"])
        let answeredAfter = ContinuousClock.now - started
        #expect(outcome.applied, "\(outcome)")
        let snapshot = try await BusSnapshot.take(try BusEndpoints.announced(by: RunDirectory(path: host.runDirectory)))
        let session = try #require(snapshot.sessions.first(where: { $0.session == client.session }))
        #expect(session.tab == "likes", "answered after \(answeredAfter) while the server still shows tab \(session.tab ?? "none")")
        let rules = try #require(try await host.status()["faults"] as? [[String: Any]])
        #expect(rules.first.flatMap { $0["fired"] as? Int } == 3, "\(rules)")
        try await journey.expect(Expectation(screen: "likes", tab: "likes", phase: .success))
    }

    /// When the writes are not confirmed in time, the answer is not "done": the caller is told
    /// the request was applied but not yet stored, and to ask again with the same key. So a kill
    /// then loses nothing: the next incarnation, which never saw the request, applies the retry.
    /// (Answering "done" after a 2 s wait lost a Photos navigation in CI: the caller did not ask
    /// again, and the owner was killed before its write went through.)
    @Test("an answer whose writes are not confirmed is held back; after a kill the retry is applied by the next incarnation",
          .timeLimit(.minutes(3)))
    func unconfirmedWritesHoldTheAnswerBack() async throws {
        let host = try await AppJourneysEndToEndTests.startApp()
        defer { Task { try? await host.stop() } }
        // Two tries of 3 s: each is held about 2 s and answered "not yet confirmed".
        let journey = try AppJourneysEndToEndTests.journey(on: host) { options in
            options.requestTimeout = .seconds(3)
            options.requestTries = 2
        }
        defer { journey.stop() }
        let client = try await AppJourneysEndToEndTests.openSignedIn(journey)
        let dropped = try await host.run(["fault", "drop", "--key", "/s/\(client.session)/nav"])
        try #require(dropped.status == 0, "\(dropped.output)")
        let prepared = try await client.prepareWhenOffered(action: "selectTab", fields: ["tab": "likes"], wait: .seconds(20))
        let held = try await client.send(prepared)
        #expect(!held.applied, "answered \(held) while its navigation write was being dropped")
        #expect(held.error?.code == .unavailable && held.error?.message.contains("not yet confirmed") == true, "\(held)")

        let owner = try await AppJourneysEndToEndTests.kill("coord-app", on: host)
        let cleared = try await host.run(["fault", "clear"])
        try #require(cleared.status == 0, "\(cleared.output)")
        try await AppJourneysEndToEndTests.restarted("coord-app", was: owner, on: host)
        let retry = try await client.send(prepared)
        #expect(retry.applied, "the retry (same key) after the kill: \(retry)")
        try await journey.expect(Expectation(screen: "likes", tab: "likes", phase: .success))
    }

    /// Starts the app, sets the fault rule `fault` (`flowbus fault drop …` arguments), plays each
    /// group of scripts side by side, and checks that every journey passed and the rule did drop.
    static func journeysUnderFault(_ fault: [String], groups: [[String]]) async throws {
        let host = try await AppJourneysEndToEndTests.startApp()
        defer { Task { try? await host.stop() } }
        let set = try await host.run(["fault", "drop"] + fault)
        try #require(set.status == 0, "\(set.output)")
        var passed = 0
        for group in groups { passed += try await playTogether(group, on: host) }
        #expect(passed == groups.joined().count)
        let rules = try #require(try await host.status()["faults"] as? [[String: Any]])
        let dropped = rules.first.flatMap { $0["fired"] as? Int } ?? 0
        #expect(dropped > 0, "the fault rule dropped nothing: \(rules)")
    }

    @Test("30 % of the requests to coord.app lost: six sign-up journeys complete", .timeLimit(.minutes(5)))
    func lossyNavigationOwner() async throws {
        let signUps = Array(repeating: "signup-to-new-password.yaml", count: 3)
        try await Self.journeysUnderFault(["--service", "coord.app", "--share", "0.3"], groups: [signUps, signUps])
    }

    @Test("20 % of the writes to /s/ lost: sign-up and expense journeys complete", .timeLimit(.minutes(5)))
    func lossySessionKeys() async throws {
        try await Self.journeysUnderFault(["--key", "/s/", "--share", "0.2"], groups: [
            Array(repeating: "signup-to-new-password.yaml", count: 3), Array(repeating: "expense-report.yaml", count: 3),
        ])
    }
}
