import ArgumentParser
import FlowChaos
import FlowClient
import FlowHost
import Logging
import Foundation

struct Chaos: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Plays journeys while a fault plan plays, then checks every session: what was lost, applied twice, out of order, stale.",
        subcommands: [Run.self, Check.self]
    )

    struct Run: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Starts (or uses) a host, plays journeys on several sessions while the plan plays, checks, and prints a verdict with the seed.",
            discussion: """
                Exit code 0 only when the checker finds nothing (lost, applied twice, out of order, stale \
                values, stuck loading, clients not converged, a journey not ending where it should, a plugin \
                not running). The report folder holds the plan, the decisions, the counts and, for each failed \
                session, its trace and a Mermaid excerpt around its first anomaly; `flowbus chaos check DIR` \
                checks it again offline. Example: `flowbus chaos run Plugins/<App>/FaultPlans/survive.yaml --seed 3`.
                """)

        @OptionGroup var global: GlobalOptions

        @Argument(help: "The fault plan (YAML).")
        var plan: String

        @Option(name: .long, help: "The seed of the plan's decisions (default: the plan's own).")
        var seed: UInt64?

        @Option(name: .long, parsing: .upToNextOption, help: "Journeys (drive scripts) to play; default: every script in the app's Journeys/.")
        var journeys: [String] = []

        @Option(name: .long, help: "Sessions played at once.")
        var sessions: Int = 4

        @Option(name: .long, help: "Seconds to play (default: the plan's duration, else 30).")
        var duration: Double?

        @Option(name: .long, help: "The report folder (default: <run-dir>/chaos/<plan>-<seed>-<time>).")
        var report: String?

        @Option(name: .long, help: "The app to start when no host runs (default: the package's default app).")
        var app: String?

        @Option(name: .long, help: "The manifest to start when no host runs, instead of an app's.")
        var manifest: String?

        @Option(name: .customLong("step-timeout"), help: "Seconds a journey's step may wait.")
        var stepTimeout: Double = 40

        @Option(name: .customLong("loading-bound"), help: "Seconds a screen may stay loading before the checker counts it.")
        var loadingBound: Double = 15

        @Flag(name: .long, help: "When the run fails, play it again with fewer of the plan's events to find a smallest plan that still fails, and print it.")
        var shrink = false

        @Option(name: .customLong("shrink-runs"), help: "The most runs --shrink may play (each as long as the first).")
        var shrinkRuns: Int = 16

        func validate() throws {
            if manifest != nil, app != nil { throw ValidationError("--manifest and --app both say what to run; give one of them") }
            guard sessions >= 1 else { throw ValidationError("--sessions must be 1 or more") }
            if let duration, duration <= 0 { throw ValidationError("--duration must be more than 0 seconds") }
            guard stepTimeout > 0, loadingBound > 0 else { throw ValidationError("--step-timeout and --loading-bound must be more than 0 seconds") }
            guard shrinkRuns >= 1 else { throw ValidationError("--shrink-runs must be 1 or more") }
        }

        func run() async throws {
            // The clients' own notes (a resync, a retry) are the run's normal life: warnings and up only.
            global.bootstrapLogging(quiet: .warning)
            let plan = try Fault.loadPlan(self.plan, seed: seed)
            let manifest = try self.manifest.map { URL(fileURLWithPath: $0).standardizedFileURL } ?? AppChoice.manifest(app: app)
            let scripts = try Self.scripts(journeys, default: manifest.deletingLastPathComponent().appendingPathComponent("Journeys"))
            let directory = global.runDirectory
            let started = try Demo.startHostIfNone(directory, manifest: manifest, logLevel: global.logLevel, label: "flowbus chaos")
            defer { if started { Demo.stopHost(directory, label: "flowbus chaos") } }
            try await Demo.waitForApp(directory, timeout: 60, label: "flowbus chaos")
            print(ChaosReport.planText(plan), terminator: "")
            let seconds = duration ?? plan.durationMilliseconds.map { Double($0) / 1000 } ?? 30
            let options = ChaosOptions(plan: plan, journeys: scripts, sessions: sessions, duration: .milliseconds(Int64(seconds * 1000)),
                                       stepTimeout: .milliseconds(Int64(stepTimeout * 1000)))
            let run = try await ChaosRunner(runDirectory: directory).run(options) { print("flowbus chaos: \($0)") }
            let checker = ChaosChecker(loadingBound: .milliseconds(Int64(loadingBound * 1000)))
            let findings = checker.check(run)
            let folder = URL(fileURLWithPath: report ?? Self.defaultReport(directory.path, plan))
            try ChaosReport.write(run, findings: findings, to: folder)
            print(ChaosReport.countsTable(findings))
            print(ChaosReport.verdict(findings, seed: plan.seed))
            print("report: \(folder.path)/report.md")
            guard !findings.passed else { return }
            if shrink { try await Self.shrink(plan, options: options, findings: findings, checker: checker, runs: shrinkRuns, directory: directory, folder: folder) }
            throw ExitCode(1)
        }

        /// Plays the plan again with fewer events until the smallest that still fails the same way
        /// (a failing count of the first run's kinds) is found or the runs run out; writes it to
        /// `<report>/shrunk.yaml` and prints it.
        static func shrink(
            _ plan: FaultPlan, options: ChaosOptions, findings: ChaosFindings, checker: ChaosChecker, runs: Int, directory: RunDirectory, folder: URL
        ) async throws {
            let kinds = Set(findings.counts.filter { $0.key.failsTheRun && $0.value > 0 }.keys)
            let names = kinds.sorted().map(\.rawValue).joined(separator: ", ")
            print("flowbus chaos: shrinking \(plan.events.count) events: up to \(runs) runs of \(ChaosRunner.seconds(options.duration)) s, each kept when \(names) still shows")
            let outcome = try await ChaosShrinker(budget: runs).shrink(events: plan.events.count, fails: { kept in
                var trial = options
                trial.plan = plan.keeping(kept)
                let found = checker.check(try await ChaosRunner(runDirectory: directory).run(trial))
                return found.counts.contains { kinds.contains($0.key) && $0.value > 0 }
            }, step: { step in
                let removed = step.removed.map { "#\($0 + 1)" }.joined(separator: " ")
                print("flowbus chaos: shrink run \(step.run)/\(runs): without \(removed) (\(step.kept.count) of \(plan.events.count) left): \(step.stillFails ? "still fails" : "passes")")
            })
            let smallest = plan.keeping(outcome.kept)
            let file = folder.appendingPathComponent("shrunk.yaml")
            try smallest.yamlText.write(to: file, atomically: true, encoding: .utf8)
            if outcome.kept.isEmpty {
                print("flowbus chaos: the run fails with no fault at all: the failure is not the faults' doing; look at the report's first anomaly")
            } else {
                let how = outcome.minimal ? "no one of them can be left out" : "more runs (--shrink-runs) may find a smaller one"
                print("flowbus chaos: smallest failing plan: \(outcome.kept.count) of \(plan.events.count) events after \(outcome.steps.count) runs (\(how)):")
                print(ChaosReport.planText(smallest), terminator: "")
            }
            print("shrunk plan: \(file.path) (replay: flowbus chaos run \(file.path) --seed \(plan.seed))")
        }

        static func scripts(_ paths: [String], default folder: URL) throws -> [DriveScript] {
            var files = paths
            if files.isEmpty {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
                files = names.filter { $0.hasSuffix(".yaml") }.sorted().map { folder.appendingPathComponent($0).path }
                guard !files.isEmpty else {
                    throw ValidationError("no journeys: \(folder.path) holds no .yaml script; give some with --journeys FILE…")
                }
            }
            return try files.map { try DriveScript.load(path: $0) }
        }

        static func defaultReport(_ runDirectory: String, _ plan: FaultPlan) -> String {
            let formatter = DateFormatter()
            formatter.dateFormat = "yyyyMMdd-HHmmss"
            return "\(runDirectory)/chaos/\(plan.name)-\(plan.seed)-\(formatter.string(from: Date()))"
        }
    }

    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Checks a saved chaos run again (its run.json), offline, and rewrites its findings and report.")

        @OptionGroup var global: GlobalOptions

        @Argument(help: "The report folder of a run.")
        var directory: String

        @Option(name: .customLong("loading-bound"), help: "Seconds a screen may stay loading before the checker counts it.")
        var loadingBound: Double = 15

        func run() throws {
            let folder = URL(fileURLWithPath: directory)
            let run: ChaosRun
            do {
                run = try ChaosReport.read(from: folder)
            } catch {
                throw Fault.PlanFileError(description: "cannot read the run in \(folder.path)/run.json: \(error); give the report folder of `flowbus chaos run`")
            }
            let started = ContinuousClock.now
            let findings = ChaosChecker(loadingBound: .milliseconds(Int64(loadingBound * 1000))).check(run)
            let elapsed = ContinuousClock.now - started
            try ChaosReport.write(run, findings: findings, to: folder, runFile: false)
            print(ChaosReport.countsTable(findings))
            print(ChaosReport.verdict(findings, seed: run.plan.seed))
            print("checked \(findings.eventsChecked) events in \(elapsed); report: \(folder.path)/report.md")
            if !findings.passed { throw ExitCode(1) }
        }
    }
}
