import FlowClient
import FlowHost
import Foundation
import Synchronization
import Testing

/// Hosts started and not yet stopped: at exit, whatever is left gets SIGTERM (its plugins die with it).
private let unstoppedHosts = Mutex<Set<Int32>>([])
private let exitHandlerInstalled = Atomic<Bool>(false)

/// `flowbus up --app photos --detach` in a run directory of its own, for one test.
struct PhotosHost {
    /// The app's MDP services: every one has a worker once the app is up.
    static let services = ["svc.accounts", "svc.photos", "svc.mail"]
        + ["login", "createaccount", "forgotpassword", "browse", "photo", "likes", "profile"].map { "vm.\($0)" }
        + ["app", "authentication", "browse"].map { "coord.\($0)" }

    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let journeys = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Journeys")

    let flowbus: URL
    let runDirectory: String

    /// Starts the app and waits until every one of its services has a worker; fails the test if it cannot.
    static func start() async throws -> PhotosHost {
        let flowbus = try #require(flowbusExecutable(), "no flowbus beside the test bundle or at \(repository.path)/.build/debug/flowbus: build first (swift build)")
        let runDirectory = "/tmp/fbp-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: runDirectory, withIntermediateDirectories: true)
        let host = PhotosHost(flowbus: flowbus, runDirectory: runDirectory)
        let up = try await host.run(["up", "--app", "photos", "--detach"])
        try #require(up.status == 0, "flowbus up --app photos --detach failed:\n\(up.output)\n\(host.hostLog)")
        if let pid = host.hostPID {
            unstoppedHosts.withLock { _ = $0.insert(pid) }
            if !exitHandlerInstalled.exchange(true, ordering: .relaxed) {
                atexit { unstoppedHosts.withLock { hosts in for pid in hosts { kill(pid, SIGTERM) } } }
            }
        }
        let ready = try await eventually(timeout: .seconds(30), every: .milliseconds(100)) {
            let workers = (try await host.status()["broker"] as? [String: Any])?["workersPerService"] as? [String: Int] ?? [:]
            return services.allSatisfy { (workers[$0] ?? 0) > 0 }
        }
        if !ready {
            try? await host.stop()
            Issue.record("the Photos app's workers did not all register:\n\(host.hostLog)")
            throw CancellationError()
        }
        return host
    }

    /// The flowbus built with these tests: beside the test bundle, else in `.build/debug`.
    static func flowbusExecutable() -> URL? {
        if let configured = ProcessInfo.processInfo.environment["FLOWBUS_BIN"] {
            let chosen = URL(fileURLWithPath: configured)
            return FileManager.default.isExecutableFile(atPath: chosen.path) ? chosen : nil
        }
        var candidates = [URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent("flowbus")]
        for bundle in Bundle.allBundles where bundle.bundleURL.pathExtension == "xctest" {
            candidates.append(bundle.bundleURL.deletingLastPathComponent().appendingPathComponent("flowbus"))
        }
        candidates.append(repository.appendingPathComponent(".build/debug/flowbus"))
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }

    struct Outcome {
        var status: Int32
        var output: String
    }

    /// Runs `flowbus ARGUMENTS --run-dir DIR` to completion (stdout and stderr together), on a
    /// thread of its own, never on Swift's cooperative pool.
    func run(_ arguments: [String]) async throws -> Outcome {
        let executable = flowbus
        let arguments = arguments + ["--run-dir", runDirectory]
        return try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                let process = Process()
                process.executableURL = executable
                process.arguments = arguments
                process.standardInput = FileHandle.nullDevice
                let pipe = Pipe()
                process.standardOutput = pipe
                process.standardError = pipe
                do {
                    try process.run()
                } catch {
                    continuation.resume(throwing: error)
                    return
                }
                let data = pipe.fileHandleForReading.readDataToEndOfFile()
                process.waitUntilExit()
                continuation.resume(returning: Outcome(status: process.terminationStatus, output: String(decoding: data, as: UTF8.self)))
            }
        }
    }

    /// `flowbus ps ARGUMENTS --json`, decoded loosely.
    func status(_ arguments: [String] = []) async throws -> [String: Any] {
        let ps = try await run(["ps"] + arguments + ["--json"])
        try #require(ps.status == 0, "flowbus ps --json failed:\n\(ps.output)")
        return try #require(try JSONSerialization.jsonObject(with: Data(ps.output.utf8)) as? [String: Any])
    }

    func plugins() async throws -> [[String: Any]] {
        try #require(try await status()["plugins"] as? [[String: Any]])
    }

    /// The live coordinator instances of `session`, as `flowbus ps --sessions` lists them.
    func coordinatorInstances(of session: String) async throws -> [String] {
        let instances = try #require(try await status(["--sessions"])["coordinatorInstances"] as? [[String: Any]])
        return instances.filter { $0["session"] as? String == session }.compactMap { $0["coordinator"] as? String }.sorted()
    }

    var hostPID: Int32? {
        guard let data = FileManager.default.contents(atPath: runDirectory + "/host.json"),
              let descriptor = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else { return nil }
        return (descriptor["pid"] as? Int).map(Int32.init)
    }

    var hostLog: String {
        FileManager.default.contents(atPath: runDirectory + "/logs/host.log").map { String(decoding: $0, as: UTF8.self) } ?? "(no host log)"
    }

    var endpoints: BusEndpoints {
        get throws { try BusEndpoints.announced(by: RunDirectory(path: runDirectory)) }
    }

    func stop() async throws {
        let pid = hostPID
        _ = try await run(["down"])
        if let pid { unstoppedHosts.withLock { _ = $0.remove(pid) } }
    }

    /// Polls `condition` until it holds or `timeout` passes; returns whether it held.
    static func eventually(timeout: Duration, every: Duration = .milliseconds(50), _ condition: () async throws -> Bool) async rethrows -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try? await Task.sleep(for: every)
        }
        return try await condition()
    }
}
