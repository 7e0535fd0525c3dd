import FlowbusTesting
import Foundation
import Testing

/// `flowbus chaos run` on the real Photos app with its own plan: lost, duplicated, reordered and
/// late messages, a view model cut off, plugins killed and stopped — nothing lost or applied twice.
@Suite("Photos chaos end to end", .serialized)
struct PhotosChaosEndToEndTests {
    @Test("the Photos app survives its plan", .timeLimit(.minutes(3)))
    func photosSurvive() async throws {
        let host = try await PhotosHost.start()
        defer { Task { try? await host.stop() } }
        let app = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        let journeys = ["create-account-to-likes", "demo-log-in", "forgot-password-from-login", "forgot-password-from-welcome"]
            .map { app.appendingPathComponent("Journeys/\($0).yaml").path }
        let report = host.fixture.runDirectory + "/chaos-report"
        let run = try await host.fixture.run(["chaos", "run", app.appendingPathComponent("FaultPlans/survive.yaml").path,
                                              "--duration", "12", "--sessions", "3", "--report", report, "--journeys"] + journeys)
        #expect(run.status == 0, "\(run.output)")
        #expect(run.output.contains("PASS: nothing lost"), "\(run.output)")
    }
}
