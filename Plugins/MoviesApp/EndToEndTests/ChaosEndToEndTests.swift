import FlowbusTesting
import Foundation
import Testing

/// `flowbus chaos run` on the real movies app: it survives its plan (lost and duplicated
/// messages, reordering, delays, a partition, kills and stops, all at once), and the checker
/// catches the two bugs planted on purpose, each only where it is planted.
@Suite("Chaos end to end", .serialized)
struct ChaosEndToEndTests {
    static let appDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()

    static func plan(_ name: String) -> String { appDirectory.appendingPathComponent("FaultPlans/\(name).yaml").path }
    static func journey(_ name: String) -> String { appDirectory.appendingPathComponent("Journeys/\(name).yaml").path }

    /// The movies manifest with `--planted-bug BUG` added to the plugin started with `args`.
    static func planted(_ bug: String, in args: [String]) throws -> String {
        try SessionExpiryEndToEndTests.manifest(adding: ["--planted-bug", bug], to: args)
    }

    /// Runs `flowbus chaos run` on `host`; its exit status, its output and the count of each anomaly.
    static func chaos(_ host: HostFixture, _ arguments: [String]) async throws -> (status: Int32, output: String, counts: [String: Int]) {
        let report = host.runDirectory + "/chaos-report"
        let outcome = try await host.run(["chaos", "run"] + arguments + ["--report", report])
        var counts: [String: Int] = [:]
        if let data = FileManager.default.contents(atPath: report + "/findings.json"),
           let findings = try JSONSerialization.jsonObject(with: data) as? [String: Any] {
            counts = findings["counts"] as? [String: Int] ?? [:]
        }
        let why = outcome.status == 0 ? "" : "\n" + HostFixture.chaosFailures(report: report)
        return (outcome.status, outcome.output + why, counts)
    }

    @Test("the movies app survives its plan: nothing lost, applied twice, out of order or stale; the run checks the same again offline",
          .timeLimit(.minutes(3)))
    func moviesSurvive() async throws {
        let host = try await AppJourneysEndToEndTests.startApp()
        defer { Task { try? await host.stop() } }
        let run = try await Self.chaos(host, [Self.plan("survive"), "--duration", "12", "--sessions", "3"])
        #expect(run.status == 0, "\(run.output)")
        #expect(run.output.contains("PASS: nothing lost") && run.output.contains("seed 14"), "\(run.output)")
        #expect(run.output.contains("faults injected"))
        let check = try await host.run(["chaos", "check", host.runDirectory + "/chaos-report"])
        #expect(check.status == 0 && check.output.contains("PASS"), "\(check.output)")
    }

    /// Plays `plan` with three users on a fresh host, expects it to pass, and returns its decision log.
    static func passingRun(_ plan: String) async throws -> String {
        let host = try await AppJourneysEndToEndTests.startApp()
        defer { Task { try? await host.stop() } }
        let run = try await Self.chaos(host, [Self.plan(plan), "--sessions", "3"])
        #expect(run.status == 0, "\(run.output)")
        #expect(run.output.contains("PASS: nothing lost"), "\(run.output)")
        return try String(contentsOfFile: host.runDirectory + "/chaos-report/decisions.txt", encoding: .utf8)
    }

    @Test("every kind of movies plugin killed and stopped once mid-journey: nothing lost or applied twice, every journey ends on its screen",
          .timeLimit(.minutes(3)))
    func everyPluginKilledAndStopped() async throws {
        let decisions = try await Self.passingRun("every-plugin")
        // Each of the 18 plugins was killed once and stopped once.
        #expect(decisions.components(separatedBy: " kill\n").count - 1 == 18, "\(decisions)")
        // A stop aimed at a plugin still restarting from its kill waits for the next process ("stop, 37 ms late").
        let stops = decisions.split(separator: "\n").filter { $0.hasSuffix(" stop") || $0.contains(" stop, ") && $0.hasSuffix("ms late: it was restarting") }
        #expect(stops.count == 18, "\(decisions)")
    }

    @Test("heartbeats held back and clocks jumped and drifting: nothing lost or applied twice, every journey ends on its screen",
          .timeLimit(.minutes(3)))
    func heartbeatsAndClocksGoWrong() async throws {
        let host = try await AppJourneysEndToEndTests.startApp()
        defer { Task { try? await host.stop() } }
        // Journeys that never reach change password: its view model stays idle, so only its
        // heartbeats tell the broker it is alive (a busy worker's replies would).
        let run = try await Self.chaos(host, [Self.plan("heartbeats-and-clocks"), "--sessions", "3",
                                              "--journeys", Self.journey("expense-report"), Self.journey("forgot-password")])
        #expect(run.status == 0 && run.output.contains("PASS: nothing lost"), "\(run.output)")
        let decisions = try String(contentsOfFile: host.runDirectory + "/chaos-report/decisions.txt", encoding: .utf8)
        // The faults took effect: all eight of the idle worker's heartbeats the rule allows were
        // held, the broker took it for dead, and four clocks were skewed and put right.
        #expect(decisions.components(separatedBy: " heartbeat vm.changepassword drop\n").count - 1 == 8, "\(decisions)")
        #expect(decisions.components(separatedBy: "clock put right").count - 1 == 4, "\(decisions)")
        let broker = try #require(try await host.status()["broker"] as? [String: Any])
        #expect((broker["workersExpired"] as? Int ?? 0) >= 1, "\(broker)")
        // The worker taken for dead registered again and serves: a journey through change password passes.
        _ = try await AppJourneysEndToEndTests.play("signup-to-new-password.yaml", on: try AppJourneysEndToEndTests.journey(on: host))
    }

    @Test("requests and values cut short or with bytes changed are each told by their check, sent again, and never applied: every journey passes",
          .timeLimit(.minutes(3)))
    func damagedMessagesAreSentAgain() async throws {
        let decisions = try await Self.passingRun("damaged")
        // Both kinds of damage reached both paths: requests (services) and writes (keys).
        for path in [" service vm.", " service coord.", " key /s/"] {
            #expect(decisions.contains(path), "no damage on\(path): \(decisions)")
        }
        #expect(decisions.contains(" truncate to ") && decisions.contains(" corrupt "), "\(decisions)")
    }

    @Test("values served stale (as a lagging replica would) are never shown: every journey passes with no staleShown",
          .timeLimit(.minutes(3)))
    func staleReadsAreNotShown() async throws {
        let host = try await AppJourneysEndToEndTests.startApp()
        defer { Task { try? await host.stop() } }
        let run = try await Self.chaos(host, [Self.plan("stale-reads"), "--journeys", Self.journey("expense-report"),
                                              Self.journey("signup-to-new-password"), "--sessions", "2", "--duration", "6"])
        #expect(run.status == 0 && (run.counts["staleShown"] ?? 0) == 0, "\(run.output)")
        let decisions = try String(contentsOfFile: host.runDirectory + "/chaos-report/decisions.txt", encoding: .utf8)
        #expect(decisions.contains("previous value served again"), "the rule served nothing stale:\n\(decisions.prefix(2000))")
    }

    /// The planted-duplicates plan with three faults that have nothing to do with the bug (the
    /// duplication is its first event).
    static let noisyDuplicates = """
        name: noisy-duplicates
        seed: 5
        faults:
          - duplicate: {service: vm.expenses, share: 0.5}
          - delay: {service: vm.home, ms: 1}
          - drop: {key: /nothing/here/}
          - stop: {plugin: vm-changepassword}
            at: 1s
            for: 1s
        """

    @Test("a view model that skips its idempotency check is caught applying duplicated intents twice; --shrink finds the one fault it needs",
          .timeLimit(.minutes(5)))
    func plantedSkippedIdempotencyIsCaught() async throws {
        let manifest = try Self.planted("skip-idempotency", in: ["--screen", "expenses"])
        let host = try await AppJourneysEndToEndTests.startApp(manifest: manifest)
        defer { Task { try? await host.stop() } }
        let plan = host.runDirectory + "/noisy-duplicates.yaml"
        try Self.noisyDuplicates.write(toFile: plan, atomically: true, encoding: .utf8)
        // Its journeys fail (two expenses where one was added): a short wait per step ends them sooner.
        let run = try await Self.chaos(host, [plan, "--journeys", Self.journey("expense-report"), "--sessions", "2",
                                              "--duration", "4", "--step-timeout", "5", "--shrink", "--shrink-runs", "8"])
        #expect(run.status == 1, "\(run.output)")
        #expect((run.counts["appliedTwice"] ?? 0) > 0, "\(run.output)")
        #expect(run.output.contains("FAIL:") && run.output.contains("appliedTwice"), "\(run.output)")
        // A failed run's expectation message carries the report's first anomaly of each failed session.
        #expect(run.output.contains("First: **") && run.output.contains("## Session "), "\(run.output)")
        // Shrunk to the duplication alone, written as a plan that replays it.
        #expect(run.output.contains("smallest failing plan: 1 of 4 events"), "\(run.output)")
        let shrunk = try String(contentsOfFile: host.runDirectory + "/chaos-report/shrunk.yaml", encoding: .utf8)
        #expect(shrunk.contains("duplicate: {service: \"vm.expenses\"") && !shrunk.contains("delay") && !shrunk.contains("stop"), "\(shrunk)")
    }

    @Test("the same duplicates on the app as it is: each intent applied once", .timeLimit(.minutes(3)))
    func duplicatesAreAppliedOnce() async throws {
        let host = try await AppJourneysEndToEndTests.startApp()
        defer { Task { try? await host.stop() } }
        let run = try await Self.chaos(host, [Self.plan("planted-duplicates"), "--journeys", Self.journey("expense-report"), "--sessions", "2", "--duration", "4"])
        #expect(run.status == 0 && (run.counts["appliedTwice"] ?? 0) == 0, "\(run.output)")
    }

    @Test("a navigation owner that ignores fencing is caught applying a replaced coordinator's calls; the real one fences them off",
          .timeLimit(.minutes(3)))
    func plantedIgnoredFencingIsCaught() async throws {
        let arguments = [Self.plan("planted-stale-home"), "--journeys", Self.journey("signup-to-new-password"), "--sessions", "2"]
        let buggy = try await AppJourneysEndToEndTests.startApp(manifest: try Self.planted("ignore-fencing", in: ["--coordinator", "app"]))
        let caught = try await Self.chaos(buggy, arguments)
        try? await buggy.stop()
        #expect(caught.status == 1 && (caught.counts["staleWrite"] ?? 0) > 0, "\(caught.output)")

        let host = try await AppJourneysEndToEndTests.startApp()
        defer { Task { try? await host.stop() } }
        let fenced = try await Self.chaos(host, arguments)
        #expect(fenced.status == 0 && (fenced.counts["staleWrite"] ?? 0) == 0, "\(fenced.output)")
        let log = (try? String(contentsOfFile: host.runDirectory + "/logs/coord-app.0.log", encoding: .utf8)) ?? ""
        #expect(log.contains("fenced a call from an older incarnation"), "the stale calls did reach coord-app")
    }
}
