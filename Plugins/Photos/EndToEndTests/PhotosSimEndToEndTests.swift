import FlowbusTesting
import Foundation
import Testing

/// `flowbus sim` on the real Photos app with its own plans: the simulator needs no code of the
/// app's, only its journeys.
@Suite("Photos sim end to end", .serialized)
struct PhotosSimEndToEndTests {
    static let plans = PhotosHost.journeys.deletingLastPathComponent().appendingPathComponent("SimPlans")

    @Test("three users make their accounts, then like and unlike photos and mistype passwords: exit 0, no journey fails, every step timed",
          .timeLimit(.minutes(3)))
    func threeUsersPass() async throws {
        let host = try await PhotosHost.start()
        defer { Task { try? await host.stop() } }
        let path = TestScratch.file("plan", suffix: ".yaml")
        try """
        name: photos-test
        seed: 5
        setup: "\(Self.plans.path)/sign-up.yaml"
        journeys:
          - {script: "\(Self.plans.path)/browse-and-like.yaml", weight: 3}
          - {script: "\(Self.plans.path)/wrong-password.yaml", weight: 1}
        think: {uniform: [10ms, 50ms]}
        users: 3
        duration: 6s
        thresholds:
          - errors < 1%
          - failed < 1%
          - journeys >= 6
        """.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let report = host.fixture.runDirectory + "/sim-report"
        let run = try await host.fixture.run(["sim", path, "--report", report])
        #expect(run.status == 0, "\(run.output)")
        let data = try #require(FileManager.default.contents(atPath: report + "/report.json"))
        let figures = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(figures["journeysFailed"] as? Int == 0 && figures["journeysTimedOut"] as? Int == 0, "\(run.output)")
        let names = (figures["metrics"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
        for name in ["journey setup", "createAccount→browse", "logIn→browse", "like→photo", "unlike→photo", "selectTab→likes"] {
            #expect(names.contains(name), "no \(name) among \(names)")
        }
    }
}
