import Foundation
import Glibc
import Testing
@testable import Supervision

@Suite struct SupervisorLifecycleTests {
    /// Appends `start NAME` once its TERM trap is set, and `stop NAME` when terminated.
    private func orderlyPlugin(_ name: String, file: String) -> PluginSpec {
        shellPlugin(name, """
            trap 'echo "stop $FLOWBUS_PLUGIN" >> \(file); exit 0' TERM
            echo "start $FLOWBUS_PLUGIN" >> \(file)
            while :; do sleep 0.05; done
            """)
    }

    @Test func startsInManifestOrderAndStopsInReverse() async throws {
        let directory = try TestDirectory()
        let order = directory.file("order")
        let manifest = Manifest(
            supervisor: fastSettings(),
            plugins: ["auth", "home", "details"].map { orderlyPlugin($0, file: order) }, baseDirectory: directory.url)
        let supervisor = Supervisor(manifest: manifest, logDirectory: directory.logs, logger: quietLogger())
        let log = EventLog(supervisor.events)
        try await onOwnThread { try supervisor.start() }
        // The events reach the log through a stream: wait for the third before reading them.
        let started = await log.wait { $0.count >= 3 }
        #expect(started?.map(\.instance.plugin) == ["auth", "home", "details"])
        #expect(await waitForLines(directory, "order", count: 3).count == 3)
        let pids = supervisor.status().compactMap(\.pid)
        #expect(pids.count == 3)

        try await onOwnThread { supervisor.stop() }
        #expect(Array(directory.lines("order").suffix(3)) == ["stop details", "stop home", "stop auth"])
        #expect(supervisor.status().allSatisfy { $0.state == .stopped && $0.pid == nil })
        #expect(supervisor.status().map(\.lastExitReason) == Array(repeating: "exited with status 0", count: 3))
        for pid in pids { #expect(!isAlive(pid)) }
        #expect(await log.wait { _ in log.isFinished } != nil, "the event stream finishes after stop()")
        #expect(log.events.suffix(3).map(\.instance.plugin) == ["details", "home", "auth"])
    }

    @Test func killsAPluginThatIgnoresSIGTERMAfterItsShutdownTimeout() async throws {
        let directory = try TestDirectory()
        let manifest = Manifest(
            supervisor: fastSettings(shutdownTimeout: .seconds(10)),
            plugins: [shellPlugin("stubborn", "trap '' TERM; echo ready > \(directory.file("ready")); while :; do sleep 0.05; done",
                                  shutdownTimeout: .milliseconds(300))],
            baseDirectory: directory.url)
        let supervisor = Supervisor(manifest: manifest, logDirectory: directory.logs, logger: quietLogger())
        try await onOwnThread { try supervisor.start() }
        _ = await waitForLines(directory, "ready", count: 1)
        let pid = try #require(supervisor.status().first?.pid)

        let began = ContinuousClock.now
        try await onOwnThread { supervisor.stop() }
        let took = ContinuousClock.now - began
        #expect(took >= .milliseconds(300) && took < .seconds(2), "stop took \(took)")
        #expect(supervisor.status().first?.lastExitReason == "killed by signal 9 (SIGKILL)")
        #expect(!isAlive(pid))
    }

    @Test func givesEachChildItsEnvironmentAndLog() async throws {
        let directory = try TestDirectory()
        let manifest = Manifest(
            supervisor: fastSettings(),
            plugins: [shellPlugin("greeter", """
                echo "$FLOWBUS_PLUGIN $FLOWBUS_REPLICA $FLOWBUS_INCARNATION $GREETING $BASE_VARIABLE" >> \(directory.file("env"))
                echo "hello from $FLOWBUS_REPLICA"; echo "complaint" >&2
                exec sleep 30
                """, replicas: 2, env: ["GREETING": "hi"])],
            baseDirectory: directory.url)
        let supervisor = Supervisor(
            manifest: manifest, environment: ["BASE_VARIABLE": "base", "PATH": "/usr/bin:/bin"],
            logDirectory: directory.logs, logger: quietLogger())
        try await onOwnThread { try supervisor.start() }
        #expect(await waitForLines(directory, "env", count: 2).sorted() == ["greeter 0 1 hi base", "greeter 1 1 hi base"])

        let statuses = supervisor.status()
        #expect(statuses.map(\.replica) == [0, 1])
        #expect(statuses.map(\.logPath) == [0, 1].map { directory.logs.appendingPathComponent("greeter.\($0).log").path })
        // The env line comes first: wait for the script's last output line too before stopping it.
        func log() -> String { (try? String(contentsOfFile: statuses[1].logPath, encoding: .utf8)) ?? "" }
        let deadline = ContinuousClock.now + .seconds(5)
        while !log().hasSuffix("complaint\n"), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        try await onOwnThread { supervisor.stop() }
        #expect(log() == "hello from 1\ncomplaint\n")
    }

    @Test func childrenGetDefaultSignalsEvenWhenTheHostBlocksThem() async throws {
        let directory = try TestDirectory()
        let manifest = Manifest(
            plugins: [shellPlugin("probe", "grep -E '^Sig(Blk|Ign)' /proc/self/status > \(directory.file("signals")); exec sleep 30")],
            baseDirectory: directory.url)
        let supervisor = Supervisor(manifest: manifest, logDirectory: directory.logs, logger: quietLogger())
        try await onOwnThread {
            // The supervisor's thread inherits this mask, as it would from a host handling SIGINT/SIGTERM.
            var blocked = sigset_t()
            sigemptyset(&blocked)
            sigaddset(&blocked, SIGINT)
            sigaddset(&blocked, SIGTERM)
            pthread_sigmask(SIG_BLOCK, &blocked, nil)
            try supervisor.start()
        }
        let lines = await waitForLines(directory, "signals", count: 2)
        // Nothing blocked; SIGUSR2 alone ignored (bit 11), until a plugin takes fault orders with it.
        #expect(lines == ["SigBlk:\t0000000000000000", "SigIgn:\t0000000000000800"])
        try await onOwnThread { supervisor.stop() }
    }

    @Test func stopKillsWhatAPluginLeftInItsProcessGroup() async throws {
        let directory = try TestDirectory()
        let manifest = Manifest(
            supervisor: fastSettings(),
            plugins: [shellPlugin("parent", "sleep 30 & echo $! > \(directory.file("grandchild")); wait")],
            baseDirectory: directory.url)
        let supervisor = Supervisor(manifest: manifest, logDirectory: directory.logs, logger: quietLogger())
        try await onOwnThread { try supervisor.start() }
        let grandchild = try #require(Int32(await waitForLines(directory, "grandchild", count: 1).first ?? ""))
        #expect(isAlive(grandchild))
        try await onOwnThread { supervisor.stop() }
        #expect(await eventually { !isAlive(grandchild) })
    }

    @Test func failsClearlyOnAMissingCommandAndStopsWhatItStarted() async throws {
        let directory = try TestDirectory()
        let manifest = Manifest(
            supervisor: fastSettings(),
            plugins: [
                shellPlugin("first", "exec sleep 30"),
                PluginSpec(name: "ghost", command: "/nonexistent/flowbus-ghost"),
            ],
            baseDirectory: directory.url)
        let supervisor = Supervisor(manifest: manifest, logDirectory: directory.logs, logger: quietLogger())
        let log = EventLog(supervisor.events)
        let error = await #expect(throws: SupervisorError.self) { try await onOwnThread { try supervisor.start() } }
        #expect(error?.description == "could not start plugin ghost: /nonexistent/flowbus-ghost: No such file or directory (errno 2) — check the manifest's command")
        let first = try #require(log.events.first?.pid)
        #expect(!isAlive(first))
        #expect(supervisor.status().map(\.state) == [.stopped, .failed])
        #expect(throws: SupervisorError.alreadyStarted) { try supervisor.start() }
    }

    @Test func findsBareCommandsOnTheSearchPathAndRelativeOnesBesideTheManifest() async throws {
        let directory = try TestDirectory()
        let bin = directory.url.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        let script = bin.appendingPathComponent("flowbus-probe")
        try "#!/bin/sh\necho \"$FLOWBUS_PLUGIN\" >> \(directory.file("ran"))\nexec sleep 30\n".write(to: script, atomically: true, encoding: .utf8)
        chmod(script.path, 0o755)
        let manifest = Manifest(
            supervisor: fastSettings(),
            plugins: [
                PluginSpec(name: "bare", command: "flowbus-probe"),
                PluginSpec(name: "relative", command: "./bin/flowbus-probe"),
            ],
            baseDirectory: directory.url)
        let supervisor = Supervisor(
            manifest: manifest, environment: ["PATH": "/usr/bin:/bin"], commandSearchPath: [bin.path],
            logDirectory: directory.logs, logger: quietLogger())
        try await onOwnThread { try supervisor.start() }
        #expect(await waitForLines(directory, "ran", count: 2).sorted() == ["bare", "relative"])
        try await onOwnThread { supervisor.stop() }

        let missing = Supervisor(
            manifest: Manifest(plugins: [PluginSpec(name: "nowhere", command: "flowbus-nowhere")], baseDirectory: directory.url),
            environment: ["PATH": "/usr/bin"], commandSearchPath: [bin.path], logDirectory: directory.logs, logger: quietLogger())
        let error = await #expect(throws: SupervisorError.self) { try await onOwnThread { try missing.start() } }
        #expect(error == .commandNotFound(plugin: "nowhere", command: "flowbus-nowhere", searched: [bin.path, "/usr/bin"]))
    }

    @Test func recordsHeartbeatsAndRefusesUnknownInstances() async throws {
        let directory = try TestDirectory()
        let manifest = Manifest(plugins: [shellPlugin("worker", "exec sleep 30")], baseDirectory: directory.url)
        let supervisor = Supervisor(manifest: manifest, logDirectory: directory.logs, logger: quietLogger())
        try await onOwnThread { try supervisor.start() }
        let pid = try #require(supervisor.status().first?.pid)
        #expect(supervisor.status().first?.lastHeartbeat == nil)
        let heard = Date(timeIntervalSinceNow: -1)
        #expect(supervisor.recordHeartbeat(pid: pid, at: heard))
        #expect(supervisor.status().first?.lastHeartbeat == heard)
        #expect(!supervisor.recordHeartbeat(pid: 1))
        #expect(supervisor.status().first?.uptime ?? 0 > 0)
        #expect(throws: SupervisorError.unknownInstance(InstanceID(plugin: "worker", replica: 1))) {
            try supervisor.kill(plugin: "worker", replica: 1)
        }
        try await onOwnThread { supervisor.stop() }
        #expect(throws: SupervisorError.notRunning(InstanceID(plugin: "worker", replica: 0))) {
            try supervisor.kill(plugin: "worker")
        }
        supervisor.stop()
    }
}

func eventually(timeout: Duration = .seconds(2), _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return condition()
}
