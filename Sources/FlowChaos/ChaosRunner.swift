import Clone
import FlowClient
import FlowHost
import FlowbusEnvironment
import Foundation
import FlowProtocol
import MessagePath
import Supervision

/// How a chaos run plays: the plan, the journeys, how many sessions at once, for how long.
public struct ChaosOptions: Sendable {
    public var plan: FaultPlan
    /// Journeys in the drive-script format, played in turn by each simulated user.
    public var journeys: [DriveScript]
    /// Sessions played at once (each a user playing journeys one after the other).
    public var sessions: Int
    /// How long users start new journeys; the plan plays as long (and is ended after).
    public var duration: Duration
    /// How long a journey's step may wait (a client retries for 31 s before it gives up).
    public var stepTimeout: Duration

    public init(plan: FaultPlan, journeys: [DriveScript], sessions: Int = 4, duration: Duration = .seconds(30),
                stepTimeout: Duration = .seconds(40)) {
        self.plan = plan
        self.journeys = journeys
        self.sessions = sessions
        self.duration = duration
        self.stepTimeout = stepTimeout
    }
}

/// Plays journeys on a running host while its plan plays, then gathers what the checker needs:
/// each journey's report and client log, the host's history of each session, the decisions, and
/// the plugins' state at the end.
public struct ChaosRunner: Sendable {
    public let runDirectory: RunDirectory

    public init(runDirectory: RunDirectory) {
        self.runDirectory = runDirectory
    }

    public func run(_ options: ChaosOptions, progress: @escaping @Sendable (String) -> Void = { _ in }) async throws -> ChaosRun {
        let endpoints = try BusEndpoints.announced(by: runDirectory)
        let started = try startPlan(options.plan)
        progress("playing plan \(options.plan.name) (seed \(options.plan.seed), \(options.plan.events.count) events) with \(options.sessions) sessions for \(Self.seconds(options.duration)) s")
        let end = ContinuousClock.now + options.duration
        let records = await withTaskGroup(of: [ChaosSessionRecord].self) { group in
            for user in 0..<options.sessions {
                group.addTask {
                    var played: [ChaosSessionRecord] = []
                    var index = user
                    while ContinuousClock.now < end {
                        let script = options.journeys[index % options.journeys.count]
                        index += options.sessions
                        let record = await Self.play(script, user: user, count: played.count, endpoints: endpoints, options: options)
                        // A failure says where and why on its line: the report's folder may be gone by the time someone reads the log.
                        let why = record.passed ? "" : ": " + Self.failureLine(record.failure)
                        progress("user \(user + 1): \(record.journey) \(record.passed ? "passed" : "FAILED") (session \(record.session))\(why)")
                        played.append(record)
                    }
                    return played
                }
            }
            var all: [ChaosSessionRecord] = []
            for await played in group { all += played }
            return all
        }
        return try await endPlan(options.plan, startedAt: started, records: records)
    }

    /// Sets `plan` playing on the host; returns when it started (Unix ns), for `endPlan`.
    public func startPlan(_ plan: FaultPlan) throws -> Int64 {
        let control = ControlClient(runDirectory: runDirectory, timeout: .seconds(10))
        let started = Self.nowNanos()
        let _: Empty = try control.send(ControlRequest(command: .faultPlan, plan: plan))
        return started
    }

    /// Ends the plan (what it stopped is woken, its rules go), and gathers the rest of the run:
    /// its decisions, the plugins once settled, and the host's history of each session played.
    public func endPlan(_ plan: FaultPlan, startedAt started: Int64, records: [ChaosSessionRecord]) async throws -> ChaosRun {
        let control = ControlClient(runDirectory: runDirectory, timeout: .seconds(10))
        let decisions: FaultDecisionLog = try control.send(ControlRequest(command: .faultDecisions))
        let _: Empty = try control.send(ControlRequest(command: .faultClear))
        let ended = Self.nowNanos()
        // Give restarted plugins a moment, then look at them.
        let processes = try await settledProcesses(control)
        var sessions: [ChaosSessionRecord] = []
        for var record in records {
            if !record.session.isEmpty, let trace: SessionTrace = try? control.send(ControlRequest(command: .trace, session: record.session)) {
                record.trace = trace
            }
            sessions.append(record)
        }
        sessions.sort { $0.session < $1.session }
        return ChaosRun(plan: plan, decisions: decisions.decisions, sessions: sessions, processes: processes,
                        startedAtUnixNanos: started, endedAtUnixNanos: ended)
    }

    /// One journey of one user: its report and its client's log.
    static func play(_ script: DriveScript, user: Int, count: Int, endpoints: BusEndpoints, options: ChaosOptions) async -> ChaosSessionRecord {
        var clientOptions = SessionClientOptions()
        clientOptions.name = "chaos-\(user + 1)/\(count + 1)"
        let journey = Journey(endpoints: endpoints, options: clientOptions, defaultTimeout: options.stepTimeout)
        journey.minimumStepTimeout = options.stepTimeout
        let report = await journey.run(script)
        defer { journey.stop() }
        let failure = report.steps.last { !$0.passed }.map { "step \($0.number) (\($0.summary)): \($0.failure ?? "failed")" }
        return ChaosSessionRecord.played(
            script, on: journey, clientName: clientOptions.name, session: report.session ?? "", passed: report.passed, failure: failure)
    }

    /// The plugins once none is starting any more (or after 10 s).
    private func settledProcesses(_ control: ControlClient) async throws -> [ChaosProcess] {
        let deadline = ContinuousClock.now + .seconds(10)
        while true {
            let status: HostStatus = try control.send(ControlRequest(command: .status))
            let processes = status.plugins.map { ChaosProcess(name: $0.name, replica: $0.replica, running: $0.state == .running, restarts: $0.restarts) }
            if processes.allSatisfy(\.running) || ContinuousClock.now >= deadline { return processes }
            try await Task.sleep(for: .milliseconds(200))
        }
    }

    static func nowNanos() -> Int64 { Int64(Date().timeIntervalSince1970 * 1e9) }

    /// A failed journey's reason on one line: its first line and the rows of its expectation that
    /// did not hold (marked ✗), which are what a person needs when the report's folder is gone.
    static func failureLine(_ failure: String?) -> String {
        let lines = (failure ?? "no reason recorded").split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        let differing = lines.dropFirst().filter { $0.hasPrefix("✗") }
        let kept = [lines.first ?? ""] + (differing.isEmpty ? Array(lines.dropFirst().prefix(2)) : Array(differing.prefix(6)))
        return String(kept.joined(separator: " / ").prefix(900))
    }

    public static func seconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return attoseconds == 0 ? "\(seconds)" : String(format: "%.1f", Double(seconds) + Double(attoseconds) * 1e-18)
    }
}

extension ChaosSessionRecord {
    /// The record of `script` played on `journey` (its client's log as the checker reads it,
    /// and how the client ended), before the host's trace is added.
    public static func played(
        _ script: DriveScript, on journey: Journey, clientName: String, session: String, passed: Bool, failure: String?
    ) -> ChaosSessionRecord {
        var clients: [ClientRecord] = []
        var finalScreen: String?
        if let client = journey.client {
            let events = client.events().compactMap(ClientEvent.init)
            let statistics = client.agentStatistics
            let view = client.view
            finalScreen = events.last { $0.kind == .navigation }?.screen
            clients.append(ClientRecord(
                name: clientName, events: events, gaps: statistics.gapsDetected, resyncs: statistics.resyncs,
                finalNavigation: view.navigation?.version ?? 0, finalScreen: view.screen ?? "",
                finalStates: Dictionary(view.states.map { ($0.key, $0.value.screenVersion) }, uniquingKeysWith: max)))
        }
        return ChaosSessionRecord(
            session: session, journey: URL(fileURLWithPath: script.name).lastPathComponent, passed: passed, failure: failure,
            expectedScreen: script.lastExpectedScreen, finalScreen: finalScreen, clients: clients)
    }
}

extension DriveScript {
    /// The screen the script's last `expect` with a screen names.
    var lastExpectedScreen: String? {
        for step in steps.reversed() {
            if case .expect(let expectation) = step.step, let screen = expectation.screen { return screen }
        }
        return nil
    }
}
