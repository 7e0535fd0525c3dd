import Foundation
import Glibc
import Testing
@testable import Supervision

@Suite struct SupervisorRestartTests {
    @Test func restartsAKilledPluginWellUnderASecond() async throws {
        let directory = try TestDirectory()
        // The manifest's default backoff, as a checker running `flowbus up` would see it.
        let manifest = Manifest(plugins: [shellPlugin("echo", "exec sleep 30")], baseDirectory: directory.url)
        let supervisor = Supervisor(manifest: manifest, logDirectory: directory.logs, logger: quietLogger())
        let log = EventLog(supervisor.events)
        try await onOwnThread { try supervisor.start() }
        let id = InstanceID(plugin: "echo", replica: 0)
        let first = try #require(supervisor.status().first?.pid)

        try supervisor.kill(plugin: "echo", signal: SIGKILL)
        let events = await log.wait { $0.count(where: { $0.kind == .started }) == 2 }
        #expect(events?.kinds(of: id) == [.started, .exited, .restarting, .started])
        #expect(events?[1] == .exited(id, pid: first, reason: .signaled(SIGKILL)))
        // The delay the supervisor chose, not a wall-clock time of this (shared, noisy) machine:
        // the first restart after a crash is scheduled within the default initial backoff.
        #expect(events?[2] == .restarting(id, after: Backoff().initial), "\(String(describing: events?[2]))")

        let status = try #require(supervisor.status().first)
        #expect(status.state == .running)
        #expect(status.restarts == 1)
        #expect(status.incarnation == 2)
        #expect(status.pid != nil && status.pid != first)
        #expect(status.lastExitReason == "killed by signal 9 (SIGKILL)")
        #expect(!isAlive(first))

        try await onOwnThread { supervisor.stop() }
        #expect(!isAlive(try #require(status.pid)))
    }

    /// A child's exit wakes the loop through the child's pidfd; it is not left for a tick.
    @Test func aCrashWakesTheLoopThroughThePidfd() async throws {
        let directory = try TestDirectory()
        let manifest = Manifest(supervisor: fastSettings(), plugins: [shellPlugin("crasher", "sleep 0.3; exit 3")], baseDirectory: directory.url)
        let supervisor = Supervisor(manifest: manifest, logDirectory: directory.logs, logger: quietLogger())
        let log = EventLog(supervisor.events)
        try await onOwnThread { try supervisor.start() }
        let events = await log.wait { $0.contains { $0.kind == .exited } }
        #expect(events?.contains { $0.kind == .exited } == true)
        #expect(supervisor.loop.exitWakes.load(ordering: .relaxed) >= 1)
        try await onOwnThread { supervisor.stop() }
    }

    /// With every child watched through its pidfd, an idle supervisor looks at its plugins about
    /// ten times a second (for silent ones and log sizes), not a hundred.
    @Test func anIdleSupervisorSeldomWakes() async throws {
        let directory = try TestDirectory()
        let manifest = Manifest(plugins: [shellPlugin("idle", "exec sleep 30", replicas: 3)], baseDirectory: directory.url)
        let supervisor = Supervisor(manifest: manifest, logDirectory: directory.logs, logger: quietLogger())
        try await onOwnThread { try supervisor.start() }
        try await Task.sleep(for: .milliseconds(200))
        let before = supervisor.loop.passes.load(ordering: .relaxed)
        try await Task.sleep(for: .seconds(1))
        let passes = supervisor.loop.passes.load(ordering: .relaxed) - before
        #expect(passes >= 1 && passes <= 30, "\(passes) passes in a second")
        try await onOwnThread { supervisor.stop() }
    }

    /// A plugin whose restart could not even start gives up; the loop then sleeps as an idle one,
    /// rather than waking at once, again and again, for the restart it no longer waits for.
    @Test func aPluginThatCouldNotRestartLeavesTheLoopIdle() async throws {
        let directory = try TestDirectory()
        let script = directory.url.appendingPathComponent("crash-once.sh")
        try "#!/bin/sh\nexit 3\n".write(to: script, atomically: true, encoding: .utf8)
        #expect(chmod(script.path, 0o755) == 0)
        let spec = PluginSpec(name: "gone", command: script.path, args: [], env: [:], restart: .permanent, replicas: 1, shutdownTimeout: nil)
        // One restart allowed, 300 ms after the exit: the script is surely gone by then.
        let settings = SupervisorSettings(intensity: 1, period: .seconds(10), backoff: Backoff(initial: .milliseconds(300), max: .milliseconds(300)), shutdownTimeout: .seconds(2))
        let manifest = Manifest(supervisor: settings, plugins: [spec], baseDirectory: directory.url)
        let supervisor = Supervisor(manifest: manifest, logDirectory: directory.logs, logger: quietLogger())
        let log = EventLog(supervisor.events)
        try await onOwnThread { try supervisor.start() }
        // Started (the script is open); gone before the restart falls due.
        try FileManager.default.removeItem(at: script)
        let events = await log.wait { $0.contains { $0.kind == .gaveUp } }
        #expect(events?.contains { $0.kind == .gaveUp } == true)
        #expect(supervisor.status().first?.state == .failed)
        let before = supervisor.loop.passes.load(ordering: .relaxed)
        try await Task.sleep(for: .seconds(1))
        let passes = supervisor.loop.passes.load(ordering: .relaxed) - before
        #expect(passes <= 30, "\(passes) passes in a second after giving up")
        try await onOwnThread { supervisor.stop() }
    }

    @Test func givesUpLoudlyWhenIntensityIsExceeded() async throws {
        let directory = try TestDirectory()
        let manifest = Manifest(
            supervisor: fastSettings(intensity: 2),
            plugins: [shellPlugin("crasher", "exit 3")], baseDirectory: directory.url)
        let (logger, messages) = capturingLogger()
        let supervisor = Supervisor(manifest: manifest, logDirectory: directory.logs, logger: logger)
        let log = EventLog(supervisor.events)
        try await onOwnThread { try supervisor.start() }
        let id = InstanceID(plugin: "crasher", replica: 0)

        let events = await log.wait { $0.contains { $0.kind == .gaveUp } }
        #expect(events?.kinds(of: id) == [
            .started, .exited, .restarting, .started, .exited, .restarting, .started, .exited, .gaveUp,
        ])
        #expect(events?.last == .gaveUp(id, reason: .exited(status: 3)))
        let status = try #require(supervisor.status().first)
        #expect(status.state == .failed)
        #expect(status.restarts == 2)
        #expect(status.pid == nil)
        #expect(status.lastExitReason == "exited with status 3")

        let complaint = messages.all.first { $0.hasPrefix("error:") } ?? ""
        #expect(complaint.contains("plugin crasher[0] restarted 2 times in 10s and keeps dying (last: exited with status 3)"))
        #expect(complaint.contains("read its log at \(status.logPath)"))
        #expect(complaint.contains("flowbus.plugin") && complaint.contains("flowbus.replica"))

        // Twice the largest backoff: a further restart would have happened by now.
        try await Task.sleep(for: .milliseconds(160))
        #expect(log.count(.started) == 3)
        try await onOwnThread { supervisor.stop() }
    }

    @Test func backsOffExponentiallyUpToTheMaximum() {
        let backoff = Backoff(initial: .milliseconds(100), max: .seconds(1))
        let delays = (0..<7).map { Instance.backoffDelay(crashes: $0, backoff: backoff) }
        #expect(delays == [100, 200, 400, 800, 1000, 1000, 1000].map { Duration.milliseconds($0) })
        #expect(Instance.backoffDelay(crashes: 10_000, backoff: backoff) == .seconds(1))
    }

    @Test("a status read just before the start it shows gives an uptime of zero, never below (ps showed -0.0s)")
    func uptimeIsNeverNegative() {
        var instance = Instance(spec: shellPlugin("a", "true"), replica: 0, logDirectory: URL(fileURLWithPath: "/tmp"))
        let before = ContinuousClock.now
        instance.markStarted(pid: 1, now: before + .milliseconds(3))
        #expect(instance.status(now: before).uptime == 0)
        #expect(instance.status(now: before + .milliseconds(1003)).uptime == 1)
    }

    @Test func forgetsOldCrashesOnceTheInstanceStaysUpLongerThanThePeriod() {
        let settings = SupervisorSettings(intensity: 1, period: .seconds(10), backoff: Backoff(initial: .milliseconds(100), max: .seconds(5)))
        var instance = Instance(spec: shellPlugin("a", "true"), replica: 0, logDirectory: URL(fileURLWithPath: "/tmp"))
        let start = ContinuousClock.now
        instance.markStarted(pid: 1, now: start)
        #expect(instance.decideAfterExit(.signaled(9), settings: settings, now: start + .seconds(1)) == .restart(after: .milliseconds(100)))
        instance.markStarted(pid: 2, now: start + .seconds(2))
        // Up for 11s: the backoff starts over and the earlier restart has left the window.
        #expect(instance.decideAfterExit(.signaled(9), settings: settings, now: start + .seconds(13)) == .restart(after: .milliseconds(100)))
        instance.markStarted(pid: 3, now: start + .seconds(13))
        #expect(instance.decideAfterExit(.signaled(9), settings: settings, now: start + .seconds(14)) == .giveUp)
        #expect(instance.state == .failed)
    }

    @Test(arguments: [
        (RestartPolicy.transient, "exit 0", false),
        (.transient, "exit 1", true),
        (.transient, "kill -TERM $$", true),
        (.temporary, "exit 1", false),
        (.temporary, "kill -KILL $$", false),
        (.permanent, "exit 0", true),
    ])
    func appliesTheRestartPolicy(policy: RestartPolicy, script: String, restarted: Bool) async throws {
        let directory = try TestDirectory()
        let manifest = Manifest(
            supervisor: fastSettings(), plugins: [shellPlugin("once", script, restart: policy)], baseDirectory: directory.url)
        let supervisor = Supervisor(manifest: manifest, logDirectory: directory.logs, logger: quietLogger())
        let log = EventLog(supervisor.events)
        try await onOwnThread { try supervisor.start() }

        await log.wait { $0.contains { $0.kind == .exited } }
        // The decision is taken under the same lock as the exit, so status already shows it.
        let status = try #require(supervisor.status().first)
        if restarted {
            // A restarted script may already have exited again (and, under load, used up its
            // intensity), so the events tell the story, not the state of this instant.
            let events = await log.wait { $0.count(where: { $0.kind == .started }) >= 2 }
            #expect(events?.kinds(of: InstanceID(plugin: "once", replica: 0)).prefix(4) == [.started, .exited, .restarting, .started])
        } else {
            #expect(status.state == .exited)
            #expect(log.count(.restarting) == 0)
        }
        try await onOwnThread { supervisor.stop() }
        #expect(restarted ? log.count(.started) >= 2 : log.count(.started) == 1)
    }

    /// The probe stopped a coordinator (SIGSTOP) and the supervisor never noticed. A process
    /// the broker heard from and then not for its liveness is killed and restarted; one that
    /// never had a worker, or that keeps being heard from, is left alone.
    @Test func killsAndRestartsAPluginSilentPastItsLiveness() async throws {
        let directory = try TestDirectory()
        var settings = fastSettings()
        settings.liveness = .milliseconds(400)
        let manifest = Manifest(
            supervisor: settings,
            plugins: [shellPlugin("stopped", "while :; do sleep 0.05; done"), shellPlugin("quiet", "while :; do sleep 0.05; done"),
                      shellPlugin("beating", "while :; do sleep 0.05; done")],
            baseDirectory: directory.url)
        let supervisor = Supervisor(manifest: manifest, logDirectory: directory.logs, logger: quietLogger())
        try await onOwnThread { try supervisor.start() }
        let pids = Dictionary(uniqueKeysWithValues: supervisor.status().map { ($0.name, $0.pid) })
        let stopped = try #require(pids["stopped"] ?? nil), beating = try #require(pids["beating"] ?? nil)
        // `stopped` had workers, then stops: heard once, never again.
        supervisor.recordHeartbeat(pid: stopped)
        kill(stopped, SIGSTOP)
        let deadline = ContinuousClock.now + .seconds(5)
        var restarted = false
        while ContinuousClock.now < deadline, !restarted {
            supervisor.recordHeartbeat(pid: beating)
            let status = supervisor.status().first { $0.name == "stopped" }
            restarted = status?.pid != nil && status?.pid != stopped && status?.state == .running
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(restarted, "\(supervisor.status())")
        #expect(!isAlive(stopped))
        let after = Dictionary(uniqueKeysWithValues: supervisor.status().map { ($0.name, $0) })
        #expect(after["stopped"]?.hangs == 1 && after["stopped"]?.restarts == 1)
        #expect(after["stopped"]?.lastExitReason == "killed by signal 9 (SIGKILL)")
        #expect(after["quiet"]?.pid == pids["quiet"] ?? nil && after["quiet"]?.hangs == 0)
        #expect(after["beating"]?.pid == beating && after["beating"]?.hangs == 0)
        try await onOwnThread { supervisor.stop() }
    }

    /// The probe saw a log line per new peer and no rotation: a plugin's log past the limit is
    /// moved aside to `.log.1` and starts again, saying so; the plugin writes on undisturbed.
    @Test func logsPastTheirLimitAreRotated() async throws {
        let directory = try TestDirectory()
        var settings = fastSettings()
        settings.logLimit = 50_000
        let manifest = Manifest(
            supervisor: settings,
            plugins: [shellPlugin("chatty", "while :; do head -c 20000 /dev/zero | tr '\\0' x; echo; sleep 0.05; done")],
            baseDirectory: directory.url)
        let supervisor = Supervisor(manifest: manifest, logDirectory: directory.logs, logger: quietLogger())
        try await onOwnThread { try supervisor.start() }
        let log = directory.logs.appendingPathComponent("chatty.0.log").path
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline, !FileManager.default.fileExists(atPath: log + ".1") {
            try await Task.sleep(for: .milliseconds(100))
        }
        let rotated = (try? FileManager.default.attributesOfItem(atPath: log + ".1")[.size] as? Int) ?? nil
        #expect((rotated ?? 0) > 50_000, "no rotated log: \(String(describing: rotated))")
        // `.log.1` shows before the cut and the note: read the log once the note is there (the
        // plugin writes on at the new end, so its next chunk may come before the note).
        var current = ""
        let noted = ContinuousClock.now + .seconds(5)
        repeat {
            current = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            if current.contains("flowbus: this log reached its size limit") { break }
            try await Task.sleep(for: .milliseconds(20))
        } while ContinuousClock.now < noted
        #expect(current.contains("flowbus: this log reached its size limit"), "\(current.prefix(80))")
        // Cut: the note stands at the start of the log, after at most a chunk or two the plugin
        // wrote between the cut and the note. (The log's whole size says how late this test read
        // it, not how large it grew: a loaded run held this task up for seconds, 980 kB.)
        let noteAt = current.range(of: "flowbus: this log reached its size limit").map { current.utf8.distance(from: current.startIndex, to: $0.lowerBound) }
        #expect((noteAt ?? .max) < 3 * 20_001, "the note is \(noteAt.map { "\($0) bytes" } ?? "missing") into the log")
        #expect(supervisor.status().first?.restarts == 0)
        try await onOwnThread { supervisor.stop() }
    }
}
