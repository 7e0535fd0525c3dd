import Foundation
import Synchronization
import Testing

/// Hosts the tests started and have not stopped. Tests stop theirs from an unstructured task in
/// a defer, which the test process may not live to run after its last test: at exit, whatever
/// is still here gets SIGTERM (its plugins die with it).
private let unstoppedHosts = Mutex<Set<Int32>>([])
private let exitHandlerInstalled = Atomic<Bool>(false)

/// A host started with `flowbus up --detach` in its own run directory, for one test.
public struct HostFixture: Sendable {
    public let flowbus: URL
    public let runDirectory: String
    public let manifestPath: String

    /// Starts a host running `manifest` (YAML text; nil: the manifest of `app`, or of the package's
    /// default app when `app` is nil too) with extra `up` arguments; fails the test if it cannot.
    /// `launcher`: a command `flowbus up` runs under, its arguments before flowbus's (as
    /// `["/usr/bin/taskset", "-c", "0,1"]`); the host it detaches inherits what the launcher set.
    public static func start(manifest: String?, app: String? = nil, arguments: [String] = [], launcher: [String] = []) async throws -> HostFixture {
        let flowbus = try #require(FlowbusProcesses.flowbusExecutable(), "build first: swift build")
        let runDirectory = TestScratch.directory("run")
        let manifestPath = runDirectory + "/manifest.yaml"
        if let manifest { try Data(manifest.utf8).write(to: URL(fileURLWithPath: manifestPath)) }
        let fixture = HostFixture(flowbus: flowbus, runDirectory: runDirectory, manifestPath: manifestPath)
        let chosen = manifest != nil ? ["--manifest", manifestPath] : app.map { ["--app", $0] } ?? []
        let up = launcher.isEmpty
            ? try await fixture.run(["up", "--detach"] + chosen + arguments)
            : try await FlowbusProcesses.run(
                URL(fileURLWithPath: launcher[0]),
                Array(launcher.dropFirst()) + [flowbus.path, "up", "--detach"] + chosen + arguments + ["--run-dir", runDirectory])
        try #require(up.status == 0, "flowbus up --detach failed:\n\(up.output)\n\(fixture.hostLog)")
        if let pid = fixture.hostPID {
            unstoppedHosts.withLock { _ = $0.insert(pid) }
            if !exitHandlerInstalled.exchange(true, ordering: .relaxed) {
                atexit { unstoppedHosts.withLock { hosts in for pid in hosts { kill(pid, SIGTERM) } } }
            }
        }
        return fixture
    }

    /// Runs a flowbus subcommand against this host's run directory.
    public func run(_ arguments: [String]) async throws -> FlowbusProcesses.Outcome {
        let outcome = try await FlowbusProcesses.run(flowbus, arguments + ["--run-dir", runDirectory])
        // A host started again on this run directory (after a kill -9) is stopped at exit too.
        if arguments.first == "up", let pid = hostPID { unstoppedHosts.withLock { _ = $0.insert(pid) } }
        return outcome
    }

    /// `flowbus ps --json`, decoded loosely; nil when the host did not answer (a host still
    /// starting on a loaded machine may miss ps's 3 s once). For loops that wait for a state: their
    /// own timeout fails the test, where `status()` would fail it at the first unanswered ps.
    public func statusIfAnswered() async -> [String: Any]? {
        guard let ps = try? await run(["ps", "--json"]), ps.status == 0 else { return nil }
        return (try? JSONSerialization.jsonObject(with: Data(ps.output.utf8))) as? [String: Any]
    }

    /// `flowbus ps --json`, decoded loosely.
    public func status() async throws -> [String: Any] {
        let ps = try await run(["ps", "--json"])
        try #require(ps.status == 0, "flowbus ps --json failed:\n\(ps.output)")
        let object = try JSONSerialization.jsonObject(with: Data(ps.output.utf8))
        return try #require(object as? [String: Any])
    }

    public func plugins() async throws -> [[String: Any]] {
        try #require(try await status()["plugins"] as? [[String: Any]])
    }

    public var descriptor: [String: Any]? {
        guard let data = FileManager.default.contents(atPath: runDirectory + "/host.json") else { return nil }
        return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
    }

    public var hostPID: Int32? { (descriptor?["pid"] as? Int).map(Int32.init) }

    public func endpoint(_ name: String) -> String? {
        (descriptor?["endpoints"] as? [String: Any])?[name] as? String
    }

    /// What a chaos report folder says of its failed sessions (each `## Session` heading, its
    /// counts, first anomaly and journey failure, without the traces) and of plugins not running
    /// at the end: for a failed expectation's message, where the run's own output says only that
    /// a journey failed and the counts.
    public static func chaosFailures(report: String) -> String {
        guard let data = FileManager.default.contents(atPath: report + "/report.md") else { return "(no \(report)/report.md)" }
        let kept = String(decoding: data, as: UTF8.self).split(separator: "\n").filter {
            $0.hasPrefix("## Session") || $0.hasPrefix("## Plugins") || $0.hasPrefix("- ") || $0.hasPrefix("First: ") || $0.hasPrefix("Journey: ")
        }
        return kept.isEmpty ? "(no failed session in \(report)/report.md)" : kept.joined(separator: "\n")
    }

    public var hostLog: String {
        (FileManager.default.contents(atPath: runDirectory + "/logs/host.log")).map { String(decoding: $0, as: UTF8.self) } ?? "(no host log)"
    }

    public func stop() async throws {
        let pid = hostPID
        _ = try await run(["down"])
        if let pid { unstoppedHosts.withLock { _ = $0.remove(pid) } }
    }

    /// Polls `condition` until it holds or `timeout` passes; returns whether it held.
    public static func eventually(timeout: Duration, every: Duration = .milliseconds(50), _ condition: () async throws -> Bool) async rethrows -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try? await Task.sleep(for: every)
        }
        return try await condition()
    }
}

public func isAlive(_ pid: Int32) -> Bool {
    kill(pid, 0) == 0
}

/// A manifest of `replicas` echo instances per named plugin.
public func echoManifest(_ plugins: [(name: String, replicas: Int)], restart: String = "permanent", args: [String] = []) -> String {
    var yaml = "supervisor:\n  intensity: 5\n  period: 10s\n  backoff: { initial: 50ms, max: 1s }\n  shutdown_timeout: 3s\nplugins:\n"
    for plugin in plugins {
        yaml += "  - name: \(plugin.name)\n    command: flowbus-echo\n    restart: \(restart)\n    replicas: \(plugin.replicas)\n"
        if !args.isEmpty { yaml += "    args: [\(args.map { "\"\($0)\"" }.joined(separator: ", "))]\n" }
    }
    return yaml
}
