import FlowbusTesting
import Foundation
import Testing

/// `flowbus chaos run` on the real Photos app with its own plans: lost, duplicated, reordered and
/// late messages, a view model cut off, plugins killed and stopped, damaged and stale messages,
/// held heartbeats and skewed clocks — nothing lost, applied twice or shown stale.
@Suite("Photos chaos end to end", .serialized)
struct PhotosChaosEndToEndTests {
    /// Plays `FaultPlans/<plan>.yaml` on a fresh Photos host with three users on the app's
    /// journeys; returns the run's status and output, and its report folder.
    static func chaos(_ plan: String, _ extra: [String] = []) async throws -> (status: Int32, output: String, report: String) {
        let host = try await PhotosHost.start()
        defer { Task { try? await host.stop() } }
        let app = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        let journeys = ["create-account-to-likes", "demo-log-in", "forgot-password-from-login", "forgot-password-from-welcome"]
            .map { app.appendingPathComponent("Journeys/\($0).yaml").path }
        let report = host.fixture.runDirectory + "/chaos-report"
        let run = try await host.fixture.run(["chaos", "run", app.appendingPathComponent("FaultPlans/\(plan).yaml").path]
            + extra + ["--sessions", "3", "--report", report, "--journeys"] + journeys)
        let why = run.status == 0 ? "" : "\n" + HostFixture.chaosFailures(report: report)
        return (run.status, run.output + why, report)
    }

    /// Plays `plan`, expects it to pass, and returns its decision log.
    @discardableResult
    static func passingRun(_ plan: String, _ extra: [String] = []) async throws -> String {
        let run = try await chaos(plan, extra)
        #expect(run.status == 0, "\(run.output)")
        #expect(run.output.contains("PASS: nothing lost"), "\(run.output)")
        return try String(contentsOfFile: run.report + "/decisions.txt", encoding: .utf8)
    }

    @Test("the Photos app survives its plan", .timeLimit(.minutes(3)))
    func photosSurvive() async throws {
        try await Self.passingRun("survive", ["--duration", "12"])
    }

    @Test("every kind of Photos plugin killed and stopped once mid-journey: nothing lost or applied twice, every journey ends on its screen",
          .timeLimit(.minutes(3)))
    func everyPluginKilledAndStopped() async throws {
        let decisions = try await Self.passingRun("every-plugin")
        // Each of the 11 plugins was killed once and stopped once.
        #expect(decisions.components(separatedBy: " kill\n").count - 1 == 11, "\(decisions)")
        // A stop aimed at a plugin still restarting from its kill waits for the next process ("stop, 37 ms late").
        let stops = decisions.split(separator: "\n").filter { $0.hasSuffix(" stop") || $0.contains(" stop, ") && $0.hasSuffix("ms late: it was restarting") }
        #expect(stops.count == 11, "\(decisions)")
    }

    @Test("damaged requests and values, stale values, held heartbeats and skewed clocks: nothing lost, applied twice or shown stale",
          .timeLimit(.minutes(3)))
    func damageStaleAndTime() async throws {
        let decisions = try await Self.passingRun("damage-stale-and-time")
        // Every kind of the plan took effect.
        for effect in [" truncate to ", " corrupt ", "previous value served again", " heartbeat vm.photo drop", "clock put right"] {
            #expect(decisions.contains(effect), "no \(effect) in \(decisions)")
        }
    }
}
