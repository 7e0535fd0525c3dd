import Foundation

/// `sim-scale`: `flowbus sim` with 10,000 simulated users (500 with `--quick`) on the real app of
/// APP.md (host + every plugin process), each pausing 5 s on average (exponential) before each
/// action, ramped up over 60 s and held for 60 s. Reads every process's PSS while the users are
/// all there (the app's and the simulator's), and the sim's own report: intents/s, whether the app
/// kept up, the simulator's CPU per intent and memory per user, journeys passed and failed.
struct SimScale {
    let options: Options
    static let name = BenchmarkName.simScale.rawValue

    var users: Int { options.quick ? 500 : 10_000 }
    var ramp: Int { options.quick ? 15 : 60 }
    var hold: Int { options.quick ? 15 : 60 }

    /// The most PSS seen at one reading, with its split.
    struct Peak {
        var totalKiB = 0
        var simulatorKiB = 0
        var appKiB = 0
    }

    func run() -> [ResultRow] {
        if let reason = AppHost.prepare(options: options, label: Self.name) { return [.unavailable(Self.name, reason)] }
        let host: AppHost
        do { host = try AppHost.start(options: options, label: Self.name) } catch { return [.failed(Self.name, error.description)] }
        defer { host.stop() }
        do throws(BenchError) {
            let folder = host.runDirectory + "/sim-scale"
            let plan = try writePlan(in: folder)
            progress("\(Self.name): \(users) users, mean pause 5 s, ramp \(ramp) s, hold \(hold) s")
            let process = Process()
            process.executableURL = URL(fileURLWithPath: host.flowbus)
            process.arguments = ["sim", plan, "--run-dir", host.runDirectory, "--report", folder + "/report", "--lanes", "64", "--run-tag", "scale"]
            process.currentDirectoryURL = host.repository
            let output = Pipe()
            process.standardOutput = output
            process.standardError = output
            let collected = OutputCollector(output.fileHandleForReading)
            // The app's CPU from here to the end, by process: what each intent costs the whole app,
            // less what the app spends idle (heartbeats, pings), measured for 5 s first.
            let idleStart = try appCPU(host)
            Thread.sleep(forTimeInterval: 5)
            let cpuBefore = try appCPU(host)
            var idlePerSecond: [String: Double] = [:]
            for (name, seconds) in cpuBefore { idlePerSecond[name] = (seconds - (idleStart[name] ?? seconds)) / 5 }
            let trafficBefore = try traffic(host)
            let runStarted = Date()
            do { try process.run() } catch { throw BenchError("cannot start `flowbus sim`: \(error)") }
            // PSS of everything every 5 s, once the ramp is over (all users there).
            var peak = Peak()
            let started = Date()
            while process.isRunning {
                Thread.sleep(forTimeInterval: 5)
                guard Date().timeIntervalSince(started) > Double(ramp) + 5, process.isRunning else { continue }
                if let reading = try? read(host, simulator: process.processIdentifier), reading.totalKiB > peak.totalKiB { peak = reading }
                progress("\(Self.name): \(Int(Date().timeIntervalSince(started))) s: \(collected.lastLine)")
            }
            process.waitUntilExit()
            let text = collected.text
            guard let data = FileManager.default.contents(atPath: folder + "/report/report.json"),
                  let report = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
                throw BenchError("`flowbus sim` exited \(process.terminationStatus) without a report: \(text.suffix(600))")
            }
            let cpuAfter = try appCPU(host)
            let trafficAfter = try traffic(host)
            _ = try host.checkNoRestarts()
            let runSeconds = Date().timeIntervalSince(runStarted)
            let spent = cpuAfter.map { name, seconds in
                (name, max(0, seconds - (cpuBefore[name] ?? 0) - (idlePerSecond[name] ?? 0) * runSeconds))
            }
            return rows(report, peak: peak, appCPU: spent, traffic: trafficAfter - trafficBefore, exitCode: process.terminationStatus)
        } catch {
            return [.failed(Self.name, error.description + "; host log: \(host.hostLogTail)")]
        }
    }

    /// The plan: each user opens a session and signs in once (the demo account: no accounts to
    /// make first), then browses in it for the rest of the run, so every user holds an open
    /// session and each sign-in's password hash is paid once, not once per journey.
    private func writePlan(in folder: String) throws(BenchError) -> String {
        let setup = """
            - open: {}
            - expect: {screen: signin}
            - send: {action: logIn, fields: {email: demo@flowbus.dev, password: flowbus123}}
            - expect: {screen: home, phase: success, timeout: 60}
            """
        let journey = """
            - send: {action: select, fields: {item: "actor:1"}}
            - expect: {screen: details, phase: success, timeout: 60}
            - send: {action: selectTab, fields: {tab: likes}}
            - expect: {screen: likes, phase: success, timeout: 60}
            - send: {action: selectTab, fields: {tab: home}}
            - expect: {screen: details, timeout: 60}
            - send: {action: back}
            - expect: {screen: home, timeout: 60}
            """
        let plan = """
            name: sim-scale
            seed: 1
            setup: signin.yaml
            journeys:
              - {script: browse.yaml, weight: 1}
            think: {exponential: 5s}
            stages:
              - {users: \(users), over: \(ramp)s, hold: \(hold)s}
            step-timeout: 60s
            """
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            try setup.write(toFile: folder + "/signin.yaml", atomically: true, encoding: .utf8)
            try journey.write(toFile: folder + "/browse.yaml", atomically: true, encoding: .utf8)
            try plan.write(toFile: folder + "/plan.yaml", atomically: true, encoding: .utf8)
        } catch {
            throw BenchError("cannot write the plan in \(folder): \(error)")
        }
        return folder + "/plan.yaml"
    }

    /// PSS of the host, every plugin, and the simulator.
    private func read(_ host: AppHost, simulator: Int32) throws(BenchError) -> Peak {
        let plugins = try host.plugins()
        var app = host.hostPID.flatMap { IdleMemory.Memory(pid: $0)?.proportionalKiB } ?? 0
        for plugin in plugins { app += plugin.pid.flatMap { IdleMemory.Memory(pid: $0)?.proportionalKiB } ?? 0 }
        let sim = IdleMemory.Memory(pid: simulator)?.proportionalKiB ?? 0
        return Peak(totalKiB: app + sim, simulatorKiB: sim, appKiB: app)
    }

    /// What the bus carried: MDP requests through the broker, Clone updates published and write
    /// confirmations sent by the server.
    struct Traffic {
        var requests = 0.0
        var updates = 0.0
        var acks = 0.0

        static func - (after: Traffic, before: Traffic) -> Traffic {
            Traffic(requests: after.requests - before.requests, updates: after.updates - before.updates, acks: after.acks - before.acks)
        }
    }

    private func traffic(_ host: AppHost) throws(BenchError) -> Traffic {
        let status = try host.status()
        let broker = status["broker"] as? [String: Any] ?? [:], clone = status["clone"] as? [String: Any] ?? [:]
        let number = { (dictionary: [String: Any], key: String) in (dictionary[key] as? NSNumber)?.doubleValue ?? 0 }
        return Traffic(requests: number(broker, "requests"), updates: number(clone, "updatesPublished"), acks: number(clone, "acksSent"))
    }

    /// CPU seconds so far of the host and of each plugin process, by name.
    private func appCPU(_ host: AppHost) throws(BenchError) -> [String: Double] {
        var seconds: [String: Double] = [:]
        if let pid = host.hostPID { seconds["host"] = OtherProcessCPU.seconds(pid: pid) ?? 0 }
        for plugin in try host.plugins() {
            seconds[plugin.name] = plugin.pid.flatMap { OtherProcessCPU.seconds(pid: $0) } ?? 0
        }
        return seconds
    }

    private func rows(_ report: [String: Any], peak: Peak, appCPU: [(String, Double)], traffic: Traffic, exitCode: Int32) -> [ResultRow] {
        let simulator = report["simulator"] as? [String: Any] ?? [:]
        let number = { (dictionary: [String: Any], key: String) in (dictionary[key] as? NSNumber)?.doubleValue ?? 0 }
        let keptUp = report["keptUp"] as? Bool ?? false
        let completed = number(report, "journeysCompleted"), failed = number(report, "journeysFailed")
        let timedOut = number(report, "journeysTimedOut")
        let steps = (report["metrics"] as? [[String: Any]] ?? []).filter { ($0["family"] as? String) == "step" }
        let worst = steps.max { number($0, "p99") < number($1, "p99") }
        let peakUsers = Int(number(simulator, "peakUsers"))
        let intents = (report["metrics"] as? [[String: Any]] ?? []).filter { ($0["family"] as? String) == "intent" }
            .reduce(0) { $0 + number($1, "count") }
        let appSeconds = appCPU.reduce(0) { $0 + $1.1 }
        let perIntent = { (seconds: Double) in intents > 0 ? seconds * 1e6 / intents : 0 }
        let heaviest = appCPU.sorted { $0.1 > $1.1 }.prefix(6)
            .map { "\($0.0) \(format(perIntent($0.1))) µs" }.joined(separator: ", ")
        return [
            ResultRow(Self.name, "simulated users at once", unit: "users", flowbus: Double(peakUsers), target: "\(users)",
                      verdict: peakUsers >= users ? .pass : .miss,
                      note: "sim-scale: `flowbus sim` exit \(exitCode); \(Int(completed)) journeys completed, \(Int(failed)) failed, \(Int(timedOut)) timed out; "
                        + "each user: open a session and log in once, then an actor, the likes tab, the home tab (still on the actor), back, again and again, pausing 5 s on average before each action"),
            ResultRow(Self.name, "intents per second", unit: "/s", flowbus: number(report, "intentsPerSecond"),
                      note: "sim-scale: the app \(keptUp ? "kept up" : "did not keep up"): \(report["keptUpReason"] as? String ?? "")"),
            ResultRow(Self.name, "slowest step p99", unit: "ms", flowbus: worst.map { number($0, "p99") },
                      note: "sim-scale: \(worst?["name"] as? String ?? "no step") (intent sent → screen in success, from when it was due)"),
            ResultRow(Self.name, "total PSS (app + simulator)", unit: "MiB", flowbus: Double(peak.totalKiB) / 1024,
                      note: "sim-scale: the largest reading with every user there: app (host + plugins) \(format(Double(peak.appKiB) / 1024)) MiB, "
                        + "simulator \(format(Double(peak.simulatorKiB) / 1024)) MiB"),
            ResultRow(Self.name, "simulator PSS", unit: "MiB", flowbus: Double(peak.simulatorKiB) / 1024),
            ResultRow(Self.name, "simulator memory per user", unit: "KiB", flowbus: number(simulator, "bytesPerUser") / 1024,
                      note: "sim-scale: (resident with every user there − resident at start) ÷ users"),
            ResultRow(Self.name, "simulator CPU per intent", unit: "µs", flowbus: number(simulator, "cpuMicrosecondsPerIntent")),
            ResultRow(Self.name, "bus messages per intent", unit: "", flowbus: intents > 0 ? (traffic.requests * 4 + traffic.updates + traffic.acks) / intents : 0,
                      note: "sim-scale: per intent sent by a simulated user, \(format(traffic.requests / max(1, intents), decimals: 2)) MDP requests (4 messages each: "
                        + "client → broker → worker → broker → client), \(format(traffic.updates / max(1, intents), decimals: 2)) Clone writes published "
                        + "(1 message in, then one per subscriber, not counted) and \(format(traffic.acks / max(1, intents), decimals: 2)) write confirmations"),
            ResultRow(Self.name, "app CPU per intent", unit: "µs", flowbus: perIntent(appSeconds),
                      note: "sim-scale: the host and every plugin process, user + system, over the whole run (sign-ins included) less their idle rate × the run's length, ÷ \(Int(intents)) intents; "
                        + "heaviest: \(heaviest)"),
        ]
    }
}

/// Reads a child's output as it comes (so its pipe never fills), keeping the last line for progress.
final class OutputCollector: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()

    init(_ handle: FileHandle) {
        handle.readabilityHandler = { [weak self] handle in
            let chunk = handle.availableData
            guard let self, !chunk.isEmpty else { return }
            self.lock.lock()
            self.data.append(chunk)
            self.lock.unlock()
        }
    }

    var text: String {
        lock.lock()
        defer { lock.unlock() }
        return String(decoding: data, as: UTF8.self)
    }

    var lastLine: String {
        text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }).last.map(String.init) ?? ""
    }
}

/// Another process's CPU time, from `/proc/<pid>/stat`.
enum OtherProcessCPU {
    /// User plus system seconds so far; nil when the process is gone or /proc is not there.
    static func seconds(pid: Int32) -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        // After "pid (comm) ": state is field 3, utime 14, stime 15.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}
