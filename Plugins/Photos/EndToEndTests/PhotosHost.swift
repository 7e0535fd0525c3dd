import FlowbusTesting
import FlowClient
import FlowHost
import Foundation
import Testing

/// `flowbus up --app photos --detach` in a run directory of its own, for one test (a
/// FlowbusTesting.HostFixture that waits for the app's workers).
struct PhotosHost: Sendable {
    /// The app's MDP services: every one has a worker once the app is up.
    static let services = ["svc.accounts", "svc.photos", "svc.mail"]
        + ["login", "createaccount", "forgotpassword", "resetpassword", "browse", "photo", "likes", "profile"].map { "vm.\($0)" }
        + ["app", "authentication", "browse"].map { "coord.\($0)" }

    static let journeys = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Journeys")

    let fixture: HostFixture

    /// Starts the app and waits until every one of its services has a worker; fails the test if it cannot.
    static func start() async throws -> PhotosHost {
        let host = PhotosHost(fixture: try await HostFixture.start(manifest: nil, app: "photos"))
        let ready = await eventually(timeout: .seconds(30), every: .milliseconds(100)) {
            let workers = (await host.fixture.statusIfAnswered()?["broker"] as? [String: Any])?["workersPerService"] as? [String: Int] ?? [:]
            return services.allSatisfy { (workers[$0] ?? 0) > 0 }
        }
        if !ready {
            try? await host.stop()
            Issue.record("the Photos app's workers did not all register:\n\(host.fixture.hostLog)")
            throw CancellationError()
        }
        return host
    }

    func plugins() async throws -> [[String: Any]] {
        try await fixture.plugins()
    }

    /// Whether every one of the app's services (`svc.*`) has a worker, within `timeout`.
    func servicesServe(within timeout: Duration = .seconds(30)) async throws -> Bool {
        await Self.eventually(timeout: timeout, every: .milliseconds(100)) {
            let workers = (await fixture.statusIfAnswered()?["broker"] as? [String: Any])?["workersPerService"] as? [String: Int] ?? [:]
            return Self.services.filter { $0.hasPrefix("svc.") }.allSatisfy { (workers[$0] ?? 0) > 0 }
        }
    }

    /// SIGKILLs the plugin `name`; returns its pid.
    func kill(_ name: String) async throws -> Int32 {
        let plugin = try #require(try await plugins().first { $0["name"] as? String == name }, "no plugin \(name) runs")
        let pid = try #require((plugin["pid"] as? Int).map(Int32.init))
        #expect(Foundation.kill(pid, SIGKILL) == 0)
        return pid
    }

    /// Waits until the host has restarted `name` under a new pid, once; fails the test if it does not.
    func restarted(_ name: String, was pid: Int32) async throws {
        var last: [String: Any]?
        let back = try await Self.eventually(timeout: .seconds(20), every: .milliseconds(100)) {
            last = try await plugins().first { $0["name"] as? String == name }
            return last?["state"] as? String == "running" && (last?["pid"] as? Int).map(Int32.init) != pid
        }
        #expect(back, "\(name) was not restarted: \(String(describing: last))")
        #expect(last?["restarts"] as? Int == 1)
    }

    /// The live coordinator instances of `session`, as `flowbus ps --sessions` lists them.
    func coordinatorInstances(of session: String) async throws -> [String] {
        let ps = try await fixture.run(["ps", "--sessions", "--json"])
        try #require(ps.status == 0, "flowbus ps --sessions --json failed:\n\(ps.output)")
        let status = try #require(try JSONSerialization.jsonObject(with: Data(ps.output.utf8)) as? [String: Any])
        let instances = try #require(status["coordinatorInstances"] as? [[String: Any]])
        return instances.filter { $0["session"] as? String == session }.compactMap { $0["coordinator"] as? String }.sorted()
    }

    var endpoints: BusEndpoints {
        get throws { try BusEndpoints.announced(by: RunDirectory(path: fixture.runDirectory)) }
    }

    func stop() async throws {
        try await fixture.stop()
    }

    static func eventually(timeout: Duration, every: Duration = .milliseconds(50), _ condition: () async throws -> Bool) async rethrows -> Bool {
        try await HostFixture.eventually(timeout: timeout, every: every, condition)
    }
}
