import Foundation

/// `idle-memory`: resident memory of an idle `flowbus up` host running 10 flowbus-echo plugins,
/// read from /proc/<pid>/status (VmRSS) of the host and of each plugin process.
struct IdleMemory {
    let options: Options
    static let plugins = 10

    private var repository: URL { URL(fileURLWithPath: options.repositoryPath) }
    /// The benchmark builds the main package in a scratch folder of its own, so it neither waits
    /// for nor disturbs whoever is using the repository's .build at the same time.
    private var scratchPath: String { repository.appendingPathComponent("Benchmarks/.build-flowbus").path }
    private var flowbus: String { scratchPath + "/release/flowbus" }

    func run() -> [ResultRow] {
        if let reason = prepare() { return [.unavailable("idle-memory", reason)] }
        let scratch: ScratchDirectory
        do { scratch = try ScratchDirectory() } catch { return [.failed("idle-memory", error.description)] }
        let runDirectory = scratch.path + "/run"
        let manifest = scratch.path + "/manifest.yaml"
        do {
            try manifestYAML().write(toFile: manifest, atomically: true, encoding: .utf8)
        } catch {
            return [.failed("idle-memory", "cannot write the manifest to \(manifest): \(error)")]
        }
        let log = scratch.path + "/host.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let host = Process()
        host.executableURL = URL(fileURLWithPath: flowbus)
        host.arguments = ["up", "--run-dir", runDirectory, "--manifest", manifest, "--log-level", "warning"]
        host.standardOutput = FileHandle(forWritingAtPath: log)
        host.standardError = FileHandle(forWritingAtPath: log)
        do { try host.run() } catch { return [.failed("idle-memory", "cannot start \(flowbus) up: \(error)")] }
        progress("idle-memory: flowbus up (pid \(host.processIdentifier)) with \(Self.plugins) flowbus-echo plugins, run directory \(runDirectory)")
        defer { shutDown(host, runDirectory: runDirectory) }

        let running: [Int32]
        switch waitForPlugins(runDirectory: runDirectory, host: host) {
        case .success(let pids): running = pids
        case .failure(let error):
            let tail = (try? String(contentsOfFile: log, encoding: .utf8))?.split(separator: "\n").suffix(3).joined(separator: " | ") ?? ""
            return [.unavailable("idle-memory", error.description + (tail.isEmpty ? "" : "; host log: \(tail)"))]
        }
        progress("idle-memory: \(running.count) plugins running; idling 2 s")
        Thread.sleep(forTimeInterval: 2)
        // The same processes must still be there: a plugin restarting meanwhile would make the figure meaningless.
        guard case .success(let after) = status(runDirectory: runDirectory), after.sorted() == running.sorted() else {
            return [.unavailable("idle-memory", "the plugins did not stay up for 2 s (they are being restarted); see `flowbus ps --run-dir \(runDirectory)`")]
        }
        let hostPID = host.processIdentifier
        guard let hostMemory = Memory(pid: hostPID) else {
            return [.failed("idle-memory", "cannot read /proc/\(hostPID)/status of the host")]
        }
        let plugins = running.compactMap(Memory.init(pid:))
        guard plugins.count == running.count else {
            return [.failed("idle-memory", "cannot read /proc/<pid>/status of every plugin (pids \(running))")]
        }
        progress("idle-memory: host \(hostMemory), plugins \(plugins.map(\.description).joined(separator: "; "))")
        let mib = { (kib: Int) in Double(kib) / 1024 }
        let average = { (values: [Int]) in Double(values.reduce(0, +)) / Double(values.count) / 1024 }
        let rss = plugins.map(\.residentKiB)
        let totalRSS = hostMemory.residentKiB + rss.reduce(0, +)
        let totalPSS = hostMemory.proportionalKiB + plugins.map(\.proportionalKiB).reduce(0, +)
        let totalAnon = hostMemory.anonymousKiB + plugins.map(\.anonymousKiB).reduce(0, +)
        return [
            ResultRow("idle-memory", "host VmRSS", unit: "MiB", flowbus: mib(hostMemory.residentKiB),
                      note: "idle-memory host: \(hostMemory)"),
            ResultRow("idle-memory", "plugin VmRSS (average of \(plugins.count))", unit: "MiB", flowbus: average(rss),
                      note: "idle-memory plugins: VmRSS min \(format(mib(rss.min()!))) MiB, max \(format(mib(rss.max()!))) MiB; "
                        + "private (RssAnon) \(format(average(plugins.map(\.anonymousKiB)))) MiB, file-backed (RssFile, shared libraries) "
                        + "\(format(average(plugins.map(\.fileKiB)))) MiB on average"),
            ResultRow("idle-memory", "total VmRSS, host + \(plugins.count) plugins", unit: "MiB", flowbus: mib(totalRSS),
                      note: "idle-memory totals: VmRSS counts each shared library once per process; PSS (/proc/<pid>/smaps_rollup) shares them out: "
                        + "\(format(mib(totalPSS))) MiB in all, of which private anonymous memory \(format(mib(totalAnon))) MiB"),
            ResultRow("idle-memory", "total PSS, host + \(plugins.count) plugins", unit: "MiB", flowbus: mib(totalPSS)),
        ]
    }

    /// What /proc says about one process's memory, in KiB.
    struct Memory: CustomStringConvertible {
        var residentKiB: Int
        var anonymousKiB: Int
        var fileKiB: Int
        var proportionalKiB: Int

        init?(pid: Int32) {
            guard let status = Self.fields("/proc/\(pid)/status"),
                  let resident = status["VmRSS"], let anonymous = status["RssAnon"], let file = status["RssFile"],
                  let rollup = Self.fields("/proc/\(pid)/smaps_rollup"), let proportional = rollup["Pss"] else { return nil }
            residentKiB = resident
            anonymousKiB = anonymous
            fileKiB = file
            proportionalKiB = proportional
        }

        var description: String {
            "VmRSS \(residentKiB) KiB (anon \(anonymousKiB), file \(fileKiB)), PSS \(proportionalKiB) KiB"
        }

        /// `Name:   1234 kB` lines as [Name: 1234].
        private static func fields(_ path: String) -> [String: Int]? {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
            var fields: [String: Int] = [:]
            for line in text.split(separator: "\n") {
                let parts = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
                guard parts.count >= 2, parts[0].hasSuffix(":"), let value = Int(parts[1]) else { continue }
                fields[String(parts[0].dropLast())] = value
            }
            return fields
        }
    }

    /// Builds the binaries (unless --skip-build) and checks the CLI has `up`; returns why not, if not.
    func prepare() -> String? {
        if !options.skipBuild {
            for product in ["flowbus", "flowbus-echo"] {
                progress("idle-memory: swift build -c release --product \(product) --scratch-path Benchmarks/.build-flowbus (in \(repository.path))")
                let (status, output) = Self.execute(
                    "/usr/bin/env", ["swift", "build", "-c", "release", "--product", product, "--scratch-path", scratchPath], in: repository)
                if status != 0 {
                    let tail = output.split(separator: "\n").filter { $0.contains("error:") }.prefix(2).joined(separator: " | ")
                    return "the main package does not build (`swift build -c release --product \(product)` exited \(status)): \(tail)"
                }
            }
        }
        guard FileManager.default.isExecutableFile(atPath: flowbus) else {
            return "\(flowbus) is missing; run without --skip-build, or `swift build -c release --scratch-path Benchmarks/.build-flowbus` at the repository root"
        }
        let (status, output) = Self.execute(flowbus, ["up", "--help"], in: repository)
        guard status == 0, output.contains("--manifest"), output.contains("--run-dir") else {
            return "`flowbus up` with --run-dir and --manifest does not exist in this build yet"
        }
        return nil
    }

    private func manifestYAML() -> String {
        var text = """
        # idle-memory benchmark: \(Self.plugins) echo plugins, one process each.
        supervisor:
          intensity: 3
          period: 10s
        plugins:

        """
        for index in 1...Self.plugins {
            text += "  - { name: echo\(index), command: flowbus-echo, restart: permanent }\n"
        }
        return text
    }

    /// Polls `flowbus ps --json` until every plugin is running (30 s at most); returns their pids.
    private func waitForPlugins(runDirectory: String, host: Process) -> Result<[Int32], BenchError> {
        let deadline = Date().addingTimeInterval(30)
        var last: Result<[Int32], BenchError> = .failure(BenchError("no status yet"))
        while Date() < deadline {
            guard host.isRunning else {
                return .failure(BenchError("`flowbus up` exited (status \(host.terminationStatus)) before \(Self.plugins) plugins ran"))
            }
            last = status(runDirectory: runDirectory)
            if case .success(let pids) = last, pids.count == Self.plugins { return last }
            Thread.sleep(forTimeInterval: 0.2)
        }
        switch last {
        case .success(let pids):
            return .failure(BenchError("only \(pids.count) of \(Self.plugins) plugins were running after 30 s (flowbus-echo may still be a placeholder that exits at once)"))
        case .failure(let error):
            return .failure(BenchError("`flowbus ps --json` never answered within 30 s: \(error)"))
        }
    }

    /// The pids of the plugins `flowbus ps --json` reports as running.
    private func status(runDirectory: String) -> Result<[Int32], BenchError> {
        let (code, output) = Self.execute(flowbus, ["ps", "--json", "--run-dir", runDirectory], in: repository)
        guard code == 0 else { return .failure(BenchError("flowbus ps exited \(code): \(output.prefix(200))")) }
        guard let start = output.firstIndex(of: "{"),
              let json = try? JSONSerialization.jsonObject(with: Data(output[start...].utf8)) as? [String: Any],
              let plugins = json["plugins"] as? [[String: Any]] else {
            return .failure(BenchError("flowbus ps --json printed no status with a plugins list"))
        }
        let pids = plugins.compactMap { plugin -> Int32? in
            guard plugin["state"] as? String == "running", let pid = plugin["pid"] as? Int else { return nil }
            return Int32(pid)
        }
        return .success(pids)
    }

    private func shutDown(_ host: Process, runDirectory: String) {
        guard host.isRunning else { return }
        progress("idle-memory: flowbus down")
        _ = Self.execute(flowbus, ["down", "--run-dir", runDirectory], in: repository)
        let deadline = Date().addingTimeInterval(25)
        while host.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        if host.isRunning {
            progress("idle-memory: the host did not stop; killing our child pid \(host.processIdentifier)")
            kill(host.processIdentifier, SIGKILL)
        }
    }

    /// Runs a command to its end; returns its exit status and its stdout and stderr together.
    static func execute(_ executable: String, _ arguments: [String], in directory: URL) -> (Int32, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.currentDirectoryURL = directory
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        do { try process.run() } catch { return (-1, "\(error)") }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
