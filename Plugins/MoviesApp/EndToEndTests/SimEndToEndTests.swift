import FlowbusTesting
import Foundation
import Testing

/// `flowbus sim` on the real movies app: simulated users on the 19 processes, a JSON and an HTML
/// report, and thresholds that decide the exit code.
@Suite("Sim end to end", .serialized)
struct SimEndToEndTests {
    static let plans = ChaosEndToEndTests.appDirectory.appendingPathComponent("SimPlans")

    /// A plan of the sample journeys with `extra` lines added (load, thresholds), written to the
    /// test's scratch folder; it names the sample scripts by their full paths.
    static func plan(_ extra: String) throws -> String {
        let path = TestScratch.file("plan", suffix: ".yaml")
        try """
        name: movies-test
        seed: 11
        setup: "\(plans.path)/sign-up.yaml"
        journeys:
          - {script: "\(plans.path)/browse.yaml", weight: 3}
          - {script: "\(plans.path)/wrong-password.yaml", weight: 1}
        think: {uniform: [10ms, 50ms]}
        \(extra)
        """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test("four users play the sample plan: exit 0, every journey passes, report.json holds the figures and report.html draws them",
          .timeLimit(.minutes(3)))
    func fourUsersPass() async throws {
        let host = try await AppJourneysEndToEndTests.startApp()
        defer { Task { try? await host.stop() } }
        let path = try Self.plan("users: 4\nduration: 6s\nthresholds:\n  - errors < 1%\n  - journeys >= 4\n")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let report = host.runDirectory + "/sim-report"
        let run = try await host.run(["sim", path, "--report", report])
        #expect(run.status == 0, "\(run.output)")
        #expect(run.output.contains("PASS") && run.output.contains("schedule hash"), "\(run.output)")
        let data = try #require(FileManager.default.contents(atPath: report + "/report.json"))
        let figures = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect((figures["journeysCompleted"] as? Int ?? 0) >= 8, "four setups and at least four journeys: \(figures["journeysCompleted"] ?? "none")")
        #expect(figures["journeysFailed"] as? Int == 0 && figures["failedRequests"] as? Int == 0, "\(run.output)")
        let names = (figures["metrics"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
        for name in ["logIn→home", "intent logIn", "journey setup", "verify→home"] {
            #expect(names.contains(name), "no \(name) among \(names)")
        }
        let html = try String(contentsOfFile: report + "/report.html", encoding: .utf8)
        #expect(html.contains("<svg") && html.contains("logIn→home") && html.contains("PASS"))
        #expect(!html.contains("<script src") && !html.contains("<link "), "the page needs no network")
    }

    @Test("an impossible threshold makes the exit code 1 and is named with what was measured", .timeLimit(.minutes(3)))
    func anImpossibleThresholdFails() async throws {
        let host = try await AppJourneysEndToEndTests.startApp()
        defer { Task { try? await host.stop() } }
        let path = try Self.plan("users: 2\nduration: 3s\nthresholds:\n  - p99(logIn->home) < 1ms\n  - errors < 1%\n")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let run = try await host.run(["sim", path, "--report", host.runDirectory + "/sim-report"])
        #expect(run.status == 1, "\(run.output)")
        #expect(run.output.contains("threshold p99(logIn→home) < 1ms: FAIL, was "), "\(run.output)")
        #expect(run.output.contains("threshold errors < 1%: pass"), "\(run.output)")
    }

    @Test("with --chaos the survive plan plays during the run and every session is checked: nothing lost, the checker's report written",
          .timeLimit(.minutes(3)))
    func aRunUnderFaultsIsChecked() async throws {
        let host = try await AppJourneysEndToEndTests.startApp()
        defer { Task { try? await host.stop() } }
        let path = try Self.plan("users: 3\nduration: 8s\n")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let report = host.runDirectory + "/sim-report"
        let run = try await host.run(["sim", path, "--chaos", ChaosEndToEndTests.plan("survive"), "--report", report])
        #expect(run.status == 0, "\(run.output)")
        #expect(run.output.contains("PASS: nothing lost, applied twice, out of order or stale in "), "\(run.output)")
        let findings = try #require(FileManager.default.contents(atPath: report + "/chaos/findings.json"), "\(run.output)")
        let checked = try #require(try JSONSerialization.jsonObject(with: findings) as? [String: Any])
        // Every journey played (a setup each, and more) was checked, under faults that took effect.
        #expect((checked["sessionsChecked"] as? Int ?? 0) >= 4, "\(checked)")
        #expect((checked["faultsInjected"] as? Int ?? 0) > 0, "\(checked)")
        let decisions = try String(contentsOfFile: report + "/chaos/decisions.txt", encoding: .utf8)
        #expect(decisions.contains(" drop"), "\(decisions)")
    }

    @Test("with --chaos a view model that skips its idempotency check is caught applying duplicated intents twice: exit 1",
          .timeLimit(.minutes(3)))
    func aPlantedBugIsCaughtUnderLoad() async throws {
        let manifest = try ChaosEndToEndTests.planted("skip-idempotency", in: ["--screen", "expenses"])
        let host = try await AppJourneysEndToEndTests.startApp(manifest: manifest)
        defer { Task { try? await host.stop() } }
        let path = TestScratch.file("plan", suffix: ".yaml")
        try """
        name: movies-expenses
        seed: 2
        journeys:
          - {script: "\(Self.plans.path)/../Journeys/expense-report.yaml", weight: 1}
        think: {constant: 10ms}
        users: 2
        journey-limit: 2
        duration: 20s
        step-timeout: 5s
        """.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let report = host.runDirectory + "/sim-report"
        let run = try await host.run(["sim", path, "--chaos", ChaosEndToEndTests.plan("planted-duplicates"), "--report", report])
        #expect(run.status == 1, "\(run.output)")
        #expect(run.output.contains("FAIL:") && run.output.contains("appliedTwice"), "\(run.output)")
    }

    /// A user whose journey failed closes its session; when the journeys act on the session its
    /// setup opened, the user signs in again on a new one before the next. Here every journey
    /// fails (it waits 1 s for a screen a select never shows): each failure is that timeout,
    /// never the next journey's first intent sent on the closed session. Before users started
    /// over, every journey after the first failure sent its select there, and it timed out here
    /// ("send timed out"; under sim-scale's load, coord.home refused it: no flow is live).
    @Test("a user that gave up on a journey starts over on a new session: no intent goes to the closed one",
          .timeLimit(.minutes(3)))
    func aUserThatGaveUpStartsOver() async throws {
        let host = try await AppJourneysEndToEndTests.startApp()
        defer { Task { try? await host.stop() } }
        let directory = TestScratch.directory("sim-restart")
        try """
        - open: {}
        - expect: {screen: signin}
        - send: {action: logIn, fields: {email: demo@flowbus.dev, password: flowbus123}}
        - expect: {screen: home, phase: success}
        """.write(toFile: directory + "/sign-in.yaml", atomically: true, encoding: .utf8)
        try """
        - send: {action: select, fields: {item: "movie:19"}}
        - expect: {screen: likes}
        """.write(toFile: directory + "/fails.yaml", atomically: true, encoding: .utf8)
        try """
        name: restarts
        seed: 3
        setup: sign-in.yaml
        journeys:
          - {script: fails.yaml, weight: 1}
        think: {constant: 10ms}
        users: 1
        duration: 8s
        step-timeout: 1s
        """.write(toFile: directory + "/plan.yaml", atomically: true, encoding: .utf8)
        let report = host.runDirectory + "/sim-report"
        let run = try await host.run(["sim", directory + "/plan.yaml", "--report", report])
        let data = try #require(FileManager.default.contents(atPath: report + "/report.json"), "\(run.output)")
        let figures = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let errors = (figures["errors"] as? [[String: Any]] ?? []).map { ($0["kind"] as? String ?? "?", $0["count"] as? Int ?? 0) }
        // A journey that ends on a step's timeout counts as timed out, one refused as failed.
        let failed = (figures["journeysFailed"] as? Int ?? 0) + (figures["journeysTimedOut"] as? Int ?? 0)
        #expect(failed >= 2, "several journeys failed, each followed by a new sign-in: \(run.output)")
        #expect(errors.map(\.0) == ["expect timed out"], "only the journeys' own timeouts: \(errors)\n\(run.output)")
        let setups = (figures["metrics"] as? [[String: Any]] ?? []).first { ($0["name"] as? String) == "journey setup" }
        #expect((setups?["count"] as? Int ?? 0) >= failed, "a sign-in after each failed journey (cut short at the end aside): \(run.output)")
    }

    @Test("a plan that cannot be read exits 64 with what is wrong")
    func anUnreadablePlanIsRefused() async throws {
        let path = try Self.plan("users: 2\nrate: 3\n")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let flowbus = try #require(FlowbusProcesses.flowbusExecutable(), "build first: swift build")
        let run = try await FlowbusProcesses.run(flowbus, ["sim", path, "--run-dir", "/tmp/flowbus-sim-unused"])
        #expect(run.status == 64, "\(run.output)")
        #expect(run.output.contains("give only one of users, rate or stages"), "\(run.output)")
    }
}
