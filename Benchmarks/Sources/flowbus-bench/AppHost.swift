import FlowClient
import FlowHost
import Foundation
import Synchronization

/// The whole movies app of APP.md as real processes, for app-journey and app-memory: the release
/// `flowbus` of `Benchmarks/.build-flowbus` runs `up --detach` with the package's default app
/// (Plugins/apps.yaml: services, ten view-model workers, seven coordinators) in a run directory of
/// its own under /tmp.
///
/// `stop()` always runs `flowbus down`; a host or plugin still alive afterwards is killed only when
/// /proc shows it belongs to this run directory. Ctrl-C and SIGTERM do the same (see `Cleanup`).
final class AppHost {
    /// Every MDP service the movies app registers (AppJourneysEndToEndTests.startApp's list).
    static let services = ["svc.users", "svc.genres", "svc.movies", "svc.mail", "svc.expenses"]
        + ["signin", "signup", "emailverification", "forgotpassword", "resetpassword", "home", "details", "likes", "settings", "changepassword", "expenses"]
            .map { "vm.\($0)" }
        + ["app", "auth", "signup", "main", "home", "settings", "expenses"].map { "coord.\($0)" }
    /// The products the movies app's manifest needs beside `flowbus` (found next to it).
    static let products = ["flowbus", "movies-services", "movies-viewmodel", "movies-coordinator"]
    /// Built once per run even when both app benchmarks run.
    private static let built = Mutex<Bool>(false)

    let label: String
    let flowbus: String
    let repository: URL
    let runDirectory: String
    private let scratch: ScratchDirectory
    private(set) var hostPID: Int32?
    private var knownPluginPIDs: Set<Int32> = []

    private init(label: String, flowbus: String, repository: URL, scratch: ScratchDirectory) {
        self.label = label
        self.flowbus = flowbus
        self.repository = repository
        self.scratch = scratch
        runDirectory = scratch.path + "/run"
    }

    /// Builds the app's binaries in release (unless --skip-build) and checks they are there;
    /// returns why not, if not.
    static func prepare(options: Options, label: String) -> String? {
        let repository = URL(fileURLWithPath: options.repositoryPath)
        let scratchPath = repository.appendingPathComponent("Benchmarks/.build-flowbus").path
        if !options.skipBuild, !built.withLock({ $0 }) {
            for product in products {
                progress("\(label): swift build -c release --product \(product) --scratch-path Benchmarks/.build-flowbus (in \(repository.path))")
                let (status, output) = IdleMemory.execute(
                    "/usr/bin/env", ["swift", "build", "-c", "release", "--product", product, "--scratch-path", scratchPath], in: repository)
                if status != 0 {
                    let tail = output.split(separator: "\n").filter { $0.contains("error:") }.prefix(2).joined(separator: " | ")
                    return "the main package does not build (`swift build -c release --product \(product)` exited \(status)): \(tail)"
                }
            }
            built.withLock { $0 = true }
        }
        for product in products where !FileManager.default.isExecutableFile(atPath: scratchPath + "/release/" + product) {
            return "\(scratchPath)/release/\(product) is missing; run without --skip-build, or `swift build -c release --product \(product) --scratch-path Benchmarks/.build-flowbus` at the repository root"
        }
        return nil
    }

    /// `flowbus up --detach` with the default manifest in a fresh run directory, then waits until
    /// every app service has a worker registered with the broker.
    /// `manifest`: YAML to run instead of the default app's manifest.
    /// `upOptions`: more `flowbus up` options for this app alone (e.g. `--placement pinned`).
    static func start(
        options: Options, label: String, manifest: String? = nil, waitingFor: [String] = AppHost.services, upOptions: [String] = []
    ) throws(BenchError) -> AppHost {
        let repository = URL(fileURLWithPath: options.repositoryPath)
        let flowbus = repository.appendingPathComponent("Benchmarks/.build-flowbus/release/flowbus").path
        let host = AppHost(label: label, flowbus: flowbus, repository: repository, scratch: try ScratchDirectory())
        Cleanup.shared.register(host.runDirectory, flowbus: flowbus)
        var chosen: [String] = []
        if let manifest {
            let path = host.scratch.path + "/manifest.yaml"
            do { try manifest.write(toFile: path, atomically: true, encoding: .utf8) } catch { throw BenchError("cannot write \(path): \(error)") }
            chosen = ["--manifest", path]
        }
        chosen += Self.extraUpOptions + upOptions
        progress("\(label): flowbus up --detach\(upOptions.isEmpty ? "" : " " + upOptions.joined(separator: " ")) (\(manifest == nil ? "default manifest: the whole app" : "its own manifest")), run directory \(host.runDirectory)")
        let (status, output) = IdleMemory.execute(
            flowbus, ["up", "--detach", "--run-dir", host.runDirectory, "--log-level", "warning"] + chosen, in: repository)
        host.hostPID = host.descriptorPID
        guard status == 0 else {
            host.stop()
            throw BenchError("`flowbus up --detach` exited \(status): \(output.suffix(600)); run it by hand with --run-dir to see why")
        }
        do throws(BenchError) {
            try host.waitForWorkers(waitingFor, timeout: 60)
        } catch {
            let log = host.hostLogTail
            host.stop()
            throw BenchError("\(error.description); host log: \(log)")
        }
        return host
    }

    /// The host's pid as written to `<run-dir>/host.json`.
    private var descriptorPID: Int32? {
        guard let data = FileManager.default.contents(atPath: runDirectory + "/host.json"),
              let json = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any], let pid = json["pid"] as? Int
        else { return nil }
        return Int32(pid)
    }

    /// More `flowbus up` options for every app this run starts ($FLOWBUS_BENCH_UP_OPTIONS, e.g.
    /// "--history-sessions 0" or "--placement pinned"): for experiments, not the targets' figures.
    static var extraUpOptions: [String] {
        (ProcessInfo.processInfo.environment["FLOWBUS_BENCH_UP_OPTIONS"] ?? "").split(separator: " ").map(String.init)
    }

    /// The endpoints the host announced in its run directory (`host.json`).
    func endpoints() throws(BenchError) -> BusEndpoints {
        do {
            return try BusEndpoints.announced(by: RunDirectory(path: runDirectory))
        } catch {
            throw BenchError("cannot read the host's endpoints from \(runDirectory)/host.json: \(error)")
        }
    }

    var hostLogTail: String {
        let text = (try? String(contentsOfFile: runDirectory + "/logs/host.log", encoding: .utf8)) ?? ""
        let tail = text.split(separator: "\n").suffix(4).joined(separator: " | ")
        return tail.isEmpty ? "(empty)" : tail
    }

    /// `flowbus ps --json`, decoded loosely.
    func status() throws(BenchError) -> [String: Any] {
        let (code, output) = IdleMemory.execute(flowbus, ["ps", "--json", "--run-dir", runDirectory], in: repository)
        guard code == 0 else { throw BenchError("`flowbus ps --json --run-dir \(runDirectory)` exited \(code): \(output.prefix(300))") }
        guard let start = output.firstIndex(of: "{"),
              let json = try? JSONSerialization.jsonObject(with: Data(output[start...].utf8)) as? [String: Any] else {
            throw BenchError("`flowbus ps --json` printed no JSON object: \(output.prefix(300))")
        }
        return json
    }

    /// One plugin as `flowbus ps --json` lists it.
    struct Plugin {
        var name: String
        var pid: Int32?
        var running: Bool
        var restarts: Int
    }

    func plugins() throws(BenchError) -> [Plugin] {
        guard let list = try status()["plugins"] as? [[String: Any]] else {
            throw BenchError("`flowbus ps --json` has no plugins list; the CLI's JSON may have changed")
        }
        let plugins = list.map { plugin in
            Plugin(name: plugin["name"] as? String ?? "?", pid: (plugin["pid"] as? Int).map(Int32.init),
                   running: plugin["state"] as? String == "running", restarts: plugin["restarts"] as? Int ?? 0)
        }
        knownPluginPIDs.formUnion(plugins.compactMap(\.pid))
        Cleanup.shared.remember(plugins.compactMap(\.pid) + [hostPID].compactMap { $0 }, of: runDirectory)
        return plugins
    }

    /// Polls `flowbus ps --json` until the broker counts a worker for every app service.
    private func waitForWorkers(_ services: [String], timeout: TimeInterval) throws(BenchError) {
        let deadline = Date().addingTimeInterval(timeout)
        var missing = services
        var lastError: BenchError?
        while Date() < deadline {
            do throws(BenchError) {
                let workers = (try status()["broker"] as? [String: Any])?["workersPerService"] as? [String: Int] ?? [:]
                missing = services.filter { (workers[$0] ?? 0) == 0 }
                if missing.isEmpty {
                    _ = try plugins()
                    return
                }
            } catch {
                lastError = error
            }
            Thread.sleep(forTimeInterval: 0.2)
        }
        throw BenchError("after \(Int(timeout)) s the broker still had no worker for \(missing.joined(separator: ", "))"
            + (lastError.map { " (last status error: \($0))" } ?? "")
            + "; check the plugins with `flowbus ps --run-dir \(runDirectory)` and their logs in \(runDirectory)/logs")
    }

    /// Every plugin must be running with no restart since the start: a restart mid-measurement
    /// would make the figures meaningless.
    func checkNoRestarts() throws(BenchError) -> [Plugin] {
        let plugins = try plugins()
        let troubled = plugins.filter { !$0.running || $0.restarts > 0 }
        guard troubled.isEmpty else {
            throw BenchError("plugins restarted or stopped during the run: "
                + troubled.map { "\($0.name) (\($0.running ? "running" : "not running"), \($0.restarts) restarts)" }.joined(separator: ", ")
                + "; see their logs in \(runDirectory)/logs (the figures of this run are discarded)")
        }
        return plugins
    }

    /// `flowbus down`, then waits for the host and every plugin it ran to be gone; kills what is
    /// left only when it belongs to this run directory. Idempotent.
    func stop() {
        Cleanup.shared.stop(runDirectory, flowbus: flowbus, label: label)
    }

    deinit { stop() }
}

/// Stops every host this run started, once: from `AppHost.stop()` and from SIGINT, SIGTERM or
/// SIGHUP, so an interrupted benchmark leaves no `flowbus up --detach` behind.
final class Cleanup: Sendable {
    static let shared = Cleanup()

    private struct Entry {
        var flowbus: String
        var pids: Set<Int32> = []
    }

    private let hosts = Mutex<[String: Entry]>([:])
    /// Written once in init and only kept alive after that, so sharing it across threads is safe.
    private nonisolated(unsafe) let signalSources: [any DispatchSourceSignal]

    private init() {
        var sources: [any DispatchSourceSignal] = []
        for number in [SIGINT, SIGTERM, SIGHUP] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                progress("signal \(number): stopping the hosts this run started")
                Cleanup.shared.stopAll()
                exit(128 + number)
            }
            source.resume()
            sources.append(source)
        }
        signalSources = sources
    }

    /// For a signal: stops every host, and removes their scratch folders (exit skips the deinits that would).
    func stopAll() {
        for (directory, entry) in hosts.withLock({ $0 }) {
            stop(directory, flowbus: entry.flowbus, label: "cleanup")
            let scratch = URL(fileURLWithPath: directory).deletingLastPathComponent().path
            if scratch.hasPrefix("/tmp/fbb-") { try? FileManager.default.removeItem(atPath: scratch) }
        }
    }

    func register(_ runDirectory: String, flowbus: String) {
        hosts.withLock { $0[runDirectory] = Entry(flowbus: flowbus) }
    }

    func remember(_ pids: [Int32], of runDirectory: String) {
        hosts.withLock { $0[runDirectory]?.pids.formUnion(pids) }
    }

    func stop(_ runDirectory: String, flowbus: String, label: String) {
        guard let entry = hosts.withLock({ $0.removeValue(forKey: runDirectory) }) else { return }
        var pids = entry.pids
        if let descriptor = FileManager.default.contents(atPath: runDirectory + "/host.json"),
           let json = (try? JSONSerialization.jsonObject(with: descriptor)) as? [String: Any], let pid = json["pid"] as? Int {
            pids.insert(Int32(pid))
        }
        progress("\(label): flowbus down --run-dir \(runDirectory)")
        let (status, output) = IdleMemory.execute(flowbus, ["down", "--run-dir", runDirectory], in: URL(fileURLWithPath: "/"))
        if status != 0, !pids.isEmpty {
            progress("\(label): flowbus down exited \(status): \(output.prefix(200))")
        }
        let deadline = Date().addingTimeInterval(25)
        while Date() < deadline, pids.contains(where: { Self.belongs($0, to: runDirectory) }) {
            Thread.sleep(forTimeInterval: 0.05)
        }
        for pid in pids where Self.belongs(pid, to: runDirectory) {
            progress("\(label): pid \(pid) of \(runDirectory) did not stop after flowbus down; killing it")
            kill(pid, SIGKILL)
        }
    }

    /// Whether `pid` is alive and is this run directory's host (its command line names the run
    /// directory) or one of its plugins (FLOWBUS_RUN_DIR in its environment): a recycled pid is left alone.
    static func belongs(_ pid: Int32, to runDirectory: String) -> Bool {
        guard kill(pid, 0) == 0 else { return false }
        // A zombie waiting for its parent has finished; nothing to stop.
        if let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
           let close = stat.lastIndex(of: ")"), stat[stat.index(close, offsetBy: 2)] == "Z" { return false }
        let read = { (file: String) -> [String] in
            guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/\(file)") else { return [] }
            return data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
        }
        return read("cmdline").contains(runDirectory) || read("environ").contains("FLOWBUS_RUN_DIR=\(runDirectory)")
    }
}
