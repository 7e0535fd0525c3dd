import ArgumentParser
import FlowChaos
import FlowClient
import FlowHost
import FlowSim
import Foundation
import Logging
import Synchronization

struct Sim: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Plays many simulated users on the running app, from a plan: latencies per step, intent and journey, errors by kind, a JSON and an HTML report, and pass/fail thresholds.",
        discussion: """
            A plan (YAML) names journeys (drive scripts) with weights, the pause before each action, \
            and the load: `users: N` (each plays journey after journey) or `rate: R` (arrivals per \
            second, one journey each), or `stages:` that ramp either. All users share one request \
            pool and one Clone feed. The same plan and seed give every user the same journeys and \
            pauses; the report names that schedule by a hash. Exit code 0 when every threshold \
            holds, 1 when one fails (each is named), 64 for a plan that cannot be read. Example: \
            `flowbus sim Plugins/<App>/SimPlans/mixed.yaml --report /tmp/sim`. With `--chaos FAULTPLAN` \
            the fault plan plays during the run, and every session is checked after as `flowbus chaos \
            run` checks one (the checker's report goes to <report>/chaos); exit 1 when it finds anything. \
            With `--agents N` this process only coordinates: it serves sim.control on the host's bus, \
            N agents on other machines (`flowbus sim-agent`) join, each plays its share of the users, \
            and their histograms are merged exactly into one report.
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The sim plan (YAML).")
    var plan: String

    @Option(name: .long, help: "The seed of users' journeys and pauses (default: the plan's own).")
    var seed: UInt64?

    @Option(name: .long, help: "The report folder (default: <run-dir>/sim/<plan>-<seed>-<time>).")
    var report: String?

    @Option(name: .long, help: "Requests in flight at once: threads of the shared request pool.")
    var lanes: Int = 32

    @Option(name: .customLong("run-tag"), help: "Tells this run's accounts apart from an earlier run's on the same host (${run}; ${unique} starts with it). Default: random.")
    var runTag: String?

    @Option(name: .long, help: "The app to start when no host runs (default: the package's default app).")
    var app: String?

    @Option(name: .long, help: "The manifest to start when no host runs, instead of an app's.")
    var manifest: String?

    @Option(name: .long, help: "A fault plan (YAML, as `flowbus chaos run` takes) to play during the run; every session is then checked.")
    var chaos: String?

    @Option(name: .customLong("chaos-seed"), help: "The seed of the fault plan's decisions (default: the fault plan's own).")
    var chaosSeed: UInt64?

    @Option(name: .customLong("loading-bound"), help: "With --chaos: seconds a screen may stay loading before the checker counts it.")
    var loadingBound: Double = 15

    @Option(name: .long, help: "Coordinate a run across machines: wait for this many `flowbus sim-agent`s to join, and split the users among them.")
    var agents: Int?

    @Option(name: .customLong("agent-timeout"), help: "With --agents: seconds to wait for every agent to join.")
    var agentTimeout: Double = 120

    func validate() throws {
        if manifest != nil, app != nil { throw ValidationError("--manifest and --app both say what to run; give one of them") }
        guard (1...1024).contains(lanes) else { throw ValidationError("--lanes must be between 1 and 1024") }
        if chaosSeed != nil, chaos == nil { throw ValidationError("--chaos-seed is the seed of a fault plan; give the plan with --chaos FILE") }
        guard loadingBound > 0 else { throw ValidationError("--loading-bound must be more than 0 seconds") }
        if let agents {
            guard (1...1000).contains(agents) else { throw ValidationError("--agents must be between 1 and 1000") }
            if chaos != nil { throw ValidationError("--chaos checks sessions this process played; with --agents the agents play them (run --chaos without --agents)") }
            guard agentTimeout > 0 else { throw ValidationError("--agent-timeout must be more than 0 seconds") }
        }
        if let runTag, runTag.isEmpty || !runTag.allSatisfy({ $0.isLetter || $0.isNumber }) {
            throw ValidationError("--run-tag must be letters and digits (it goes into e-mail addresses and ids)")
        }
    }

    func run() async throws {
        global.bootstrapLogging(quiet: .warning)
        let plan: SimPlan
        do {
            plan = try SimPlan.load(path: self.plan, seed: seed)
        } catch {
            FileHandle.standardError.write(Data("flowbus sim: \(error)\n".utf8))
            throw ExitCode(64)
        }
        let faultPlan = try chaos.map { try Fault.loadPlan($0, seed: chaosSeed) }
        let manifest = try self.manifest.map { URL(fileURLWithPath: $0).standardizedFileURL } ?? AppChoice.manifest(app: app)
        let directory = global.runDirectory
        let started = try Demo.startHostIfNone(directory, manifest: manifest, logLevel: global.logLevel, label: "flowbus sim")
        defer { if started { Demo.stopHost(directory, label: "flowbus sim") } }
        try await Demo.waitForApp(directory, timeout: 60, label: "flowbus sim")
        var options = SimRunner.Options(endpoints: try BusEndpoints.announced(by: directory))
        options.lanes = lanes
        if let runTag { options.runTag = runTag }
        if let agents {
            let result = try await coordinate(plan, agents: agents, endpoints: options.endpoints, run: options.runTag, directory: directory)
            if !result.passed { throw ExitCode(1) }
            return
        }
        let records = Mutex<[ChaosSessionRecord]>([])
        if faultPlan != nil {
            options.journeyEnded = { end in
                guard !end.cutShort, let client = end.journey.client else { return }
                let record = ChaosSessionRecord.played(
                    end.script, on: end.journey, clientName: client.options.name, session: client.session, passed: end.passed, failure: end.failure)
                records.withLock { $0.append(record) }
            }
        }
        let model = plan.load.isOpen ? "up to \(plan.load.peak) arrivals/s" : "up to \(Int(plan.load.peak)) users"
        print("flowbus sim: \(plan.name), seed \(plan.seed), \(model), \(plan.journeys.count) journeys, pauses \(plan.think), \(Int(plan.duration / .seconds(1))) s, run \(options.runTag)")
        let chaosRunner = ChaosRunner(runDirectory: directory)
        var faultsStarted: Int64?
        if let faultPlan {
            print(ChaosReport.planText(faultPlan), terminator: "")
            faultsStarted = try chaosRunner.startPlan(faultPlan)
        }
        let runner = SimRunner(plan: plan, options: options)
        let progress = ProgressLine(terminal: isatty(STDOUT_FILENO) == 1)
        let result = try await runner.runToResult { elapsed in progress.show(runner, elapsed: elapsed) }
        progress.end()
        let folder = try writeReport(result, plan: plan, directory: directory)
        var checked = true
        if let faultPlan, let faultsStarted {
            let run = try await chaosRunner.endPlan(faultPlan, startedAt: faultsStarted, records: records.withLock { $0 })
            let findings = ChaosChecker(loadingBound: .milliseconds(Int64(loadingBound * 1000))).check(run)
            let chaosFolder = URL(fileURLWithPath: folder).appendingPathComponent("chaos")
            try ChaosReport.write(run, findings: findings, to: chaosFolder)
            print(ChaosReport.countsTable(findings))
            print(ChaosReport.verdict(findings, seed: faultPlan.seed))
            print("checker's report: \(chaosFolder.path)/report.md")
            checked = findings.passed
        }
        if !result.passed || !checked { throw ExitCode(1) }
    }

    /// The run across machines: serve sim.control, wait for the agents, start them together,
    /// show their summed progress, merge their reports.
    private func coordinate(_ plan: SimPlan, agents: Int, endpoints: BusEndpoints, run: String, directory: RunDirectory) async throws -> SimResult {
        let coordinator: SimCoordinator
        do {
            coordinator = try SimCoordinator(plan: plan, run: run, agents: agents, endpoints: endpoints)
        } catch {
            FileHandle.standardError.write(Data("flowbus sim: \(error)\n".utf8))
            throw ExitCode(1)
        }
        defer { coordinator.stop() }
        let descriptor = try directory.requireLiveHost()
        let model = plan.load.isOpen ? "up to \(plan.load.peak) arrivals/s" : "up to \(Int(plan.load.peak)) users"
        print("flowbus sim: \(plan.name), seed \(plan.seed), \(model) across \(agents) agent(s), run \(run)")
        print("waiting for \(agents) agent(s) (up to \(Int(agentTimeout)) s); on each machine run:")
        // A host listening on every address is reached at one of them: the agent's machine knows which.
        func reachable(_ endpoint: String) -> String { endpoint.replacingOccurrences(of: "://0.0.0.0:", with: "://HOST:") }
        print("  flowbus sim-agent --broker \(reachable(descriptor.endpoints.broker)) --clone \(reachable(Self.cloneBase(descriptor.endpoints.cloneSnapshot)))"
              + (descriptor.serverPublicKey == nil ? "" : " --server-key HOST.pub --key AGENT.key"))
        if !descriptor.endpoints.broker.hasPrefix("tcp://") {
            print("  (this host listens on ipc only: agents on this machine join with `flowbus sim-agent --run-dir \(directory.path)`; start it with --broker tcp://… for other machines)")
        }
        let progress = ProgressLine(terminal: isatty(STDOUT_FILENO) == 1)
        do {
            try await coordinator.waitForAgents(timeout: .milliseconds(Int64(agentTimeout * 1000))) { count in
                progress.show("\(count) of \(agents) agent(s) joined")
            }
        } catch {
            progress.end()
            FileHandle.standardError.write(Data("flowbus sim: \(error)\n".utf8))
            throw ExitCode(1)
        }
        progress.end()
        for agent in coordinator.joined { print("agent \(agent.index): \(agent.name)") }
        let start = try coordinator.start(after: .seconds(2))
        let deadline = start + plan.duration + .seconds(60)
        while ContinuousClock.now < deadline {
            try? await Task.sleep(for: .seconds(1))
            let missing = await coordinator.waitForReports(timeout: .zero)
            if missing.isEmpty { break }
            let all = coordinator.progress
            guard !all.isEmpty else { continue }
            let journeys = SimMetrics.journeys(
                completed: all.reduce(0) { $0 + $1.journeysCompleted }, failed: all.reduce(0) { $0 + $1.journeysFailed },
                timedOut: all.reduce(0) { $0 + ($1.journeysTimedOut ?? 0) })
            progress.show(String(
                format: "[%4.0fs] users %d · %d intents/s · step p99 %.1f ms (worst agent) · errors %d · ",
                max(0, (ContinuousClock.now - start) / .seconds(1)), all.reduce(0) { $0 + $1.running }, all.reduce(0) { $0 + $1.intentsLastSecond },
                all.map(\.stepP99).max() ?? 0.0, all.reduce(0) { $0 + $1.errors }) + "\(journeys) · \(agents - missing.count) of \(agents) agents reported")
        }
        progress.end()
        let missing = await coordinator.waitForReports(timeout: .zero)
        if !missing.isEmpty {
            FileHandle.standardError.write(Data("flowbus sim: agent(s) \(missing.map(String.init).joined(separator: ", ")) sent no report within \(Int((plan.duration / .seconds(1)) + 60)) s of the start; their logs say why (the report merges the others)\n".utf8))
        }
        var result = coordinator.result(start: start)
        if !missing.isEmpty {
            result.thresholds.append(SimResult.ThresholdResult(
                rule: "every agent reports", value: Double(agents - missing.count), unit: "agents", passed: false,
                detail: "\(missing.count) of \(agents) agent(s) sent no report"))
        }
        try writeReport(result, plan: plan, directory: directory)
        return result
    }

    /// Writes report.json and report.html, prints the summary and where they are; returns the folder.
    @discardableResult
    private func writeReport(_ result: SimResult, plan: SimPlan, directory: RunDirectory) throws -> String {
        let folder = report ?? Self.defaultReport(directory.path, plan)
        try SimReport.write(result, to: folder)
        print(Self.summary(result))
        print("report: \(folder)/report.html (figures: \(folder)/report.json)")
        return folder
    }

    /// `tcp://h:P` from the snapshot endpoint `tcp://h:P` (the base the Clone server's three ports start at).
    static func cloneBase(_ snapshot: String) -> String {
        snapshot.hasSuffix(".snapshot") ? String(snapshot.dropLast(".snapshot".count)) : snapshot
    }

    static func summary(_ result: SimResult) -> String {
        var lines = [String(
            format: "%d journeys completed, %d failed, %d timed out, %d cut short at the end; %d requests, %d failed (%.3f%%); %.1f intents/s",
            result.journeysCompleted, result.journeysFailed, result.journeysTimedOut, result.journeysCutShort, result.requests,
            result.failedRequests, result.errorShare * 100, result.intentsPerSecond)]
        for metric in result.metrics where metric.family != "intent" {
            lines.append(String(format: "  %-34@ n=%-6llu p50 %8.2f  p90 %8.2f  p99 %8.2f  p99.9 %8.2f  max %8.2f ms", metric.name as NSString,
                                metric.count, metric.p50, metric.p90, metric.p99, metric.p999, metric.max))
        }
        for error in result.errors.prefix(8) { lines.append("  error ×\(error.count): \(error.kind)") }
        for agent in result.agents ?? [] {
            lines.append(String(format: "  agent %d (%@): %d users, %d intents, %d journeys completed, %.2f s CPU, %d MiB resident",
                                agent.index, agent.name, agent.usersStarted, agent.intents, agent.journeysCompleted, agent.cpuSeconds,
                                agent.residentBytes / 1_048_576))
        }
        lines.append("the app \(result.keptUp ? "kept up" : "did not keep up"): \(result.keptUpReason)")
        lines.append(String(format: "simulator: %.2f s CPU (%.0f µs per intent), %d MiB resident, ~%d KiB per user; schedule hash %@ (seed %llu)",
                            result.simulator.cpuSeconds, result.simulator.cpuMicrosecondsPerIntent, result.simulator.residentBytes / 1_048_576,
                            result.simulator.bytesPerUser / 1024, result.scheduleHash, result.seed))
        for threshold in result.thresholds {
            lines.append(threshold.passed ? "threshold \(threshold.rule): pass" : "threshold \(threshold.rule): FAIL, \(threshold.detail)")
        }
        lines.append(result.passed ? "PASS" : "FAIL: \(result.thresholds.filter { !$0.passed }.count) threshold(s) failed")
        return lines.joined(separator: "\n")
    }

    static func defaultReport(_ runDirectory: String, _ plan: SimPlan) -> String {
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyyMMdd-HHmmss"
        return "\(runDirectory)/sim/\(plan.name)-\(plan.seed)-\(formatter.string(from: Date()))"
    }
}

/// One line a second: rewritten in place on a terminal, printed as plain lines otherwise.
final class ProgressLine: Sendable {
    let terminal: Bool

    init(terminal: Bool) { self.terminal = terminal }

    func show(_ text: String) {
        if terminal {
            FileHandle.standardOutput.write(Data("\r\u{1B}[K\(text)".utf8))
        } else {
            print(text)
            // Into a pipe (a CI log, a benchmark reading the progress) the C library would hold
            // every line until exit: out with it now, and with the lines printed before it.
            fflush(nil)
        }
    }

    /// A runner's second: users, intents/s, step p99, errors, journeys.
    func show(_ runner: SimRunner, elapsed: Duration) {
        let figures = runner.metrics.progress()
        show(String(
            format: "[%4.0fs] users %d · %d intents/s · step p99 %.1f ms · errors %d · ",
            elapsed / .seconds(1), runner.running, figures.intentsLastSecond, figures.stepP99, figures.errors)
            + SimMetrics.journeys(completed: figures.journeysCompleted, failed: figures.journeysFailed, timedOut: figures.journeysTimedOut))
    }

    func end() {
        if terminal { FileHandle.standardOutput.write(Data("\n".utf8)) }
    }
}
