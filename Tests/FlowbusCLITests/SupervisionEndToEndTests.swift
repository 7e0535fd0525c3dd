import FlowbusTesting
import Foundation
import Testing

/// `flowbus up --detach`, `ps --json`, kill -9, `down`: the host as a person and a checker use it.
@Suite("Host supervision end to end", .serialized)
struct SupervisionEndToEndTests {
    @Test("kill -9 of a plugin: running again with restarts 1 within a second; down leaves no process", .timeLimit(.minutes(2)))
    func killedPluginIsRestartedAndDownLeavesNothing() async throws {
        let host = try await HostFixture.start(manifest: echoManifest([("alpha", 2), ("beta", 1)]))
        defer { Task { try? await host.stop() } }

        let allRunning = try await HostFixture.eventually(timeout: .seconds(10)) {
            let plugins = try await host.plugins()
            return plugins.count == 3 && plugins.allSatisfy { $0["state"] as? String == "running" }
        }
        #expect(allRunning, "not every plugin reached running:\n\(host.hostLog)")
        let before = try await host.plugins()
        #expect(before.map { $0["name"] as? String } == ["alpha", "alpha", "beta"])
        let victim = try #require(before.first { $0["name"] as? String == "beta" })
        let victimPID = try #require((victim["pid"] as? Int).map(Int32.init))
        let others = before.compactMap { ($0["pid"] as? Int).map(Int32.init) }.filter { $0 != victimPID }

        #expect(kill(victimPID, SIGKILL) == 0)
        let killedAt = ContinuousClock.now
        var restarted: [String: Any]?
        _ = try await HostFixture.eventually(timeout: .seconds(3), every: .milliseconds(20)) {
            let beta = try await host.plugins().first { $0["name"] as? String == "beta" }
            if let beta, beta["state"] as? String == "running", let pid = beta["pid"] as? Int, Int32(pid) != victimPID {
                restarted = beta
                return true
            }
            return false
        }
        let elapsed = ContinuousClock.now - killedAt
        let again = try #require(restarted, "beta was not restarted:\n\(host.hostLog)")
        // The host's own reaction: time since the kill, less how long the new process had
        // already been up when ps answered (our polling of ps adds nothing to it).
        let uptime = try #require(again["uptime"] as? Double)
        let restartLatency = elapsed - .milliseconds(Int(uptime * 1000))
        #expect(restartLatency < .seconds(1), "the host took \(restartLatency) to restart the plugin")
        #expect(again["restarts"] as? Int == 1)
        #expect(again["incarnation"] as? Int == 2)
        #expect((again["lastExitReason"] as? String)?.contains("SIGKILL") == true)
        #expect(others.allSatisfy(isAlive), "the other plugins must not be touched (one_for_one)")

        let hostPID = try #require(host.hostPID)
        let pids = try await host.plugins().compactMap { ($0["pid"] as? Int).map(Int32.init) } + [hostPID]
        let down = try await host.run(["down"])
        #expect(down.status == 0, "\(down.output)")
        let gone = await HostFixture.eventually(timeout: .seconds(5)) { !pids.contains(where: isAlive) }
        #expect(gone, "processes left after down: \(pids.filter(isAlive))")
        #expect(host.descriptor == nil, "host.json must be removed on a clean stop")
    }

    @Test("the plugins die with the host, even when it is killed with SIGKILL", .timeLimit(.minutes(2)))
    func pluginsDieWithAKilledHost() async throws {
        let host = try await HostFixture.start(manifest: echoManifest([("echo", 3)]))
        let running = try await HostFixture.eventually(timeout: .seconds(10)) {
            try await host.plugins().filter { $0["state"] as? String == "running" }.count == 3
        }
        #expect(running)
        let pids = try await host.plugins().compactMap { ($0["pid"] as? Int).map(Int32.init) }
        let hostPID = try #require(host.hostPID)
        #expect(kill(hostPID, SIGKILL) == 0)
        let gone = await HostFixture.eventually(timeout: .seconds(5)) { !pids.contains(where: isAlive) }
        #expect(gone, "plugins outlived their SIGKILLed host: \(pids.filter(isAlive))")
        let ps = try await host.run(["ps"])
        #expect(ps.status != 0)
        #expect(ps.output.contains("no flowbus host is running"), "\(ps.output)")
    }

    @Test("a second host in the same run directory is refused with the way out", .timeLimit(.minutes(1)))
    func secondHostIsRefused() async throws {
        let host = try await HostFixture.start(manifest: "plugins: []\n")
        defer { Task { try? await host.stop() } }
        let again = try await host.run(["up", "--detach", "--manifest", host.manifestPath])
        #expect(again.status != 0)
        #expect(again.output.contains("already running"), "\(again.output)")
        #expect(again.output.contains("flowbus down"), "\(again.output)")
    }

    @Test("a bad manifest stops `up` with an error that says where", .timeLimit(.minutes(1)))
    func badManifestIsExplained() async throws {
        let flowbus = try #require(FlowbusProcesses.flowbusExecutable())
        let directory = TestScratch.directory("fbc")
        let path = directory + "/bad.yaml"
        try Data("plugins:\n  - name: echo\n    command: flowbus-echo\n    restrat: permanent\n".utf8).write(to: URL(fileURLWithPath: path))
        let up = try await FlowbusProcesses.run(flowbus, ["up", "--run-dir", directory, "--manifest", path])
        #expect(up.status != 0)
        #expect(up.output.contains("restrat"), "\(up.output)")
    }

    @Test("SIGTERM during start-up stops the host cleanly, with its plugins", .timeLimit(.minutes(1)), arguments: [60, 150, 400])
    func sigtermDuringStartUp(delayMilliseconds: Int) async throws {
        let flowbus = try #require(FlowbusProcesses.flowbusExecutable())
        let directory = TestScratch.directory("fbc")
        let manifest = directory + "/manifest.yaml"
        try Data(echoManifest([("echo", 2)]).utf8).write(to: URL(fileURLWithPath: manifest))
        let status = try await onThread { () -> (Int32, Process.TerminationReason) in
            let process = Process()
            process.executableURL = flowbus
            process.arguments = ["up", "--run-dir", directory, "--manifest", manifest]
            _ = FileManager.default.createFile(atPath: directory + "/host.err", contents: nil)
            process.standardOutput = FileHandle.nullDevice
            process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: directory + "/host.err"))
            try process.run()
            Thread.sleep(forTimeInterval: Double(delayMilliseconds) / 1000)
            process.terminate()
            process.waitUntilExit()
            return (process.terminationStatus, process.terminationReason)
        }
        #expect(status.1 == .exit, "the host was killed by the signal instead of stopping")
        #expect(status.0 == 0)
        // Every process the host logged (itself and each plugin it started) must be gone.
        let log = String(decoding: FileManager.default.contents(atPath: directory + "/host.err") ?? Data(), as: UTF8.self)
        let pids = Set(log.split(separator: " ").compactMap { word in
            word.hasPrefix("flowbus.pid=") ? Int32(word.dropFirst("flowbus.pid=".count)) : nil
        })
        #expect(!pids.isEmpty || delayMilliseconds < 100, "the host logged no pid:\n\(log)")
        let gone = await HostFixture.eventually(timeout: .seconds(3)) { !pids.contains(where: isAlive) }
        #expect(gone, "left running: \(pids.filter(isAlive))")
    }

    @Test("--placement pinned: every host thread on one CPU, each plugin on the next in turn, shown by ps", .timeLimit(.minutes(2)))
    func pinnedPlacementPinsTheHostAndEachPlugin() async throws {
        let allowed = try cpuList(of: "self")
        let host = try await HostFixture.start(manifest: echoManifest([("alpha", 2), ("beta", 1)]), arguments: ["--placement", "pinned"])
        defer { Task { try? await host.stop() } }
        let running = try await HostFixture.eventually(timeout: .seconds(10)) {
            try await host.plugins().filter { $0["state"] as? String == "running" }.count == 3
        }
        #expect(running, "not every plugin reached running:\n\(host.hostLog)")
        let status = try await host.status()
        let hostCPU = try #require(status["hostCPU"] as? Int, "ps --json has no hostCPU: \(status)")
        let hostIndex = try #require(allowed.firstIndex(of: hostCPU), "the host's CPU \(hostCPU) is not one of \(allowed)")
        let hostPID = try #require(host.hostPID)
        let threads = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(hostPID)/task")
        #expect(!threads.isEmpty)
        for thread in threads {
            #expect(try cpuList(of: "\(hostPID)/task/\(thread)") == [hostCPU], "host thread \(thread)")
        }
        let plugins = try await host.plugins()
        let cpus = plugins.compactMap { $0["cpu"] as? Int }
        #expect(cpus == (1...3).map { allowed[(hostIndex + $0) % allowed.count] }, "\(plugins)")
        for plugin in plugins {
            let pid = try #require(plugin["pid"] as? Int)
            #expect(try cpuList(of: "\(pid)") == [plugin["cpu"] as? Int ?? -1], "\(plugin)")
        }
        let ps = try await host.run(["ps"])
        #expect(ps.output.contains("cpus     pinned: the host on CPU \(hostCPU)"), "\(ps.output)")
        let rows = ps.output.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        #expect(rows.contains { $0.prefix(4) == ["PLUGIN", "PID", "CPU", "STATE"] }, "\(ps.output)")
        for plugin in plugins {
            let row = rows.first { $0.first == "\(plugin["name"] as? String ?? "")[\(plugin["replica"] as? Int ?? -1)]" }
            #expect(row?.dropFirst(2).first == (plugin["cpu"] as? Int).map(String.init), "\(ps.output)")
        }
    }

    @Test("flowbus up's default placement (auto) pins the host and each plugin when the host may use two CPUs, and nothing when it may use one", .timeLimit(.minutes(2)))
    func autoPlacementPinsOnTwoCPUsOnly() async throws {
        let allowed = try cpuList(of: "self")
        try #require(allowed.count >= 2, "this test needs two CPUs to give the host; this process may use \(allowed)")
        // No --placement, and no FLOWBUS_PLACEMENT from the test's environment: the default decides.
        func launcher(_ cpus: [Int]) -> [String] {
            ["/usr/bin/env", "-u", "FLOWBUS_PLACEMENT", "/usr/bin/taskset", "-c", cpus.map(String.init).joined(separator: ",")]
        }
        let two = Array(allowed.prefix(2))
        let host = try await HostFixture.start(manifest: echoManifest([("alpha", 2)]), launcher: launcher(two))
        defer { Task { try? await host.stop() } }
        let running = try await HostFixture.eventually(timeout: .seconds(10)) {
            try await host.plugins().filter { $0["state"] as? String == "running" }.count == 2
        }
        #expect(running, "not every plugin reached running:\n\(host.hostLog)")
        let status = try await host.status()
        #expect(status["placement"] as? String == "auto", "\(status)")
        let hostCPU = try #require(status["hostCPU"] as? Int, "auto on two CPUs did not pin the host: \(status)\n\(host.hostLog)")
        #expect(two.contains(hostCPU), "the host's CPU \(hostCPU) is not one of \(two)")
        let hostPID = try #require(host.hostPID)
        #expect(try cpuList(of: "\(hostPID)") == [hostCPU])
        let plugins = try await host.plugins()
        let other = two.first { $0 != hostCPU } ?? -1
        #expect(plugins.compactMap { $0["cpu"] as? Int } == [other, hostCPU], "\(plugins)")
        let ps = try await host.run(["ps"])
        #expect(ps.output.contains("cpus     pinned: the host on CPU \(hostCPU)"), "\(ps.output)")
        #expect(ps.output.contains("--placement auto, the default on a host that may use two CPUs"), "\(ps.output)")
        #expect(host.hostLog.contains("--placement auto: the host may use two CPUs"), "\(host.hostLog)")
        try await host.stop()

        let one = try await HostFixture.start(manifest: echoManifest([("alpha", 1)]), launcher: launcher([allowed[0]]))
        defer { Task { try? await one.stop() } }
        let started = try await HostFixture.eventually(timeout: .seconds(10)) {
            try await one.plugins().first?["state"] as? String == "running"
        }
        #expect(started, "the plugin did not reach running:\n\(one.hostLog)")
        let alone = try await one.status()
        #expect(alone["hostCPU"] == nil, "auto on one CPU pinned the host: \(alone)")
        #expect(try await one.plugins().allSatisfy { $0["cpu"] == nil }, "auto on one CPU pinned a plugin")
        #expect(one.hostLog.contains("placement shared (--placement auto): the host may use 1 CPU, and auto pins only on two"), "\(one.hostLog)")
        let psOne = try await one.run(["ps"])
        #expect(!psOne.output.contains("cpus     pinned"), "\(psOne.output)")
    }

    @Test("a placement flowbus up does not know is refused before anything starts, naming every choice", .timeLimit(.minutes(1)))
    func unknownPlacementIsRefused() async throws {
        let flowbus = try #require(FlowbusProcesses.flowbusExecutable(), "build first: swift build")
        let directory = TestScratch.directory("placement")
        let up = try await FlowbusProcesses.run(flowbus, ["up", "--detach", "--placement", "spread", "--run-dir", directory])
        #expect(up.status != 0)
        #expect(up.output.contains("--placement must be auto"), "\(up.output)")
        #expect(up.output.contains("shared (the kernel places every thread)"), "\(up.output)")
        #expect(up.output.contains("pinned (the host and each plugin process on one CPU each)"), "\(up.output)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/host.json"), "no host may start")
    }

    /// The CPUs /proc/<path>/status allows, expanded ("0-1,3" → [0, 1, 3]).
    private func cpuList(of path: String) throws -> [Int] {
        let status = try String(contentsOfFile: "/proc/\(path)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("Cpus_allowed_list:") })
        let list = line.split(separator: "\t").last.map(String.init) ?? ""
        return list.split(separator: ",").flatMap { range -> [Int] in
            let bounds = range.split(separator: "-").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
            guard let low = bounds.first else { return [] }
            return Array(low...(bounds.last ?? low))
        }
    }
}
