import Clone
import FlowClient
import Foundation
import Logging
import Majordomo
import Synchronization
import ZeroMQ

/// The coordinator of a run across machines (`flowbus sim PLAN --agents N`): serves
/// `sim.control`, publishes the plan and the start instant under `/sim/<run>/`, writes each
/// agent's progress there, and merges the agents' measurements exactly (`SimMetrics.merge`).
/// It plays no users itself. See `SimControl` for the conversation.
public final class SimCoordinator: Sendable {
    public let plan: SimPlan
    public let run: String
    public let agents: Int
    let logger: Logger
    private let clone: CloneAgent
    private let state = Mutex(State())
    private let served = DispatchSemaphore(value: 0)

    public struct Agent: Sendable, Equatable {
        public var index: Int
        public var name: String
        public var id: String
    }

    struct State {
        var joined: [String: Agent] = [:]
        var started: Int64?
        var progress: [Int: SimControl.Progress] = [:]
        var reports: [Int: SimControl.Report] = [:]
        var stopping = false
        var refused = 0
        var serveError: String?
    }

    /// Publishes the plan and starts serving `sim.control` on `endpoints`' broker (the host's
    /// own user's: on a closed host only an operator may serve `sim.*` and write `/sim/`).
    public init(plan: SimPlan, run: String, agents: Int, endpoints: BusEndpoints, logger: Logger = Logger(label: "flowbus.sim")) throws(SimControlError) {
        guard agents > 0 else { throw SimControlError("a run across machines needs at least one agent (--agents N, N ≥ 1)") }
        self.plan = plan
        self.run = run
        self.agents = agents
        self.logger = logger
        let context: ZMQContext
        do { context = try ZMQContext() } catch { throw SimControlError("cannot make a ZeroMQ context: \(error)") }
        let curve: (serverKey: CurveKey, keyPair: CurveKeyPair)?
        do { curve = try endpoints.curve() } catch { throw SimControlError("\(error)") }
        var configuration = CloneAgentConfiguration(subtrees: [SimControl.subtree(run)])
        configuration.confirmWrites = true
        configuration.curve = curve
        do {
            clone = try CloneAgent(context: context, endpoints: endpoints.clone, configuration: configuration, logger: logger)
        } catch {
            throw SimControlError("cannot reach the Clone server at \(endpoints.clone.snapshot): \(error)")
        }
        let runPlan = SimControl.RunPlan(run: run, text: plan.text, scripts: plan.scripts, seed: plan.seed, agents: agents)
        try write(SimControl.planKey(run), runPlan)
        guard clone.settle(timeout: .seconds(10)) else {
            clone.stop()
            throw SimControlError("the Clone server did not confirm the run's plan within 10 s: only the host's own user may write /sim/ (run flowbus sim on the host's machine, as its user)")
        }
        let broker = endpoints.broker
        let thread = Thread { [self] in
            serve(context: context, broker: broker, curve: curve)
            served.signal()
        }
        thread.name = "flowbus-sim-control"
        thread.start()
    }

    private func write(_ key: String, _ value: some Encodable) throws(SimControlError) {
        do {
            try clone.set(key: key, value: SimControl.encode(value))
        } catch {
            throw SimControlError("cannot write \(key): \(error)")
        }
    }

    private func serve(context: ZMQContext, broker: String, curve: (serverKey: CurveKey, keyPair: CurveKeyPair)?) {
        var configuration = WorkerConfiguration()
        configuration.curveServerKey = curve?.serverKey
        configuration.curveKeyPair = curve?.keyPair
        do {
            let worker = try MajordomoWorker(context: context, endpoint: broker, service: SimControl.service, configuration: configuration, logger: logger)
            try worker.run(until: { state.withLock { $0.stopping } }) { request in handle(request.body) }
        } catch {
            logger.error("sim.control stopped serving", metadata: ["flowbus.error": "\(error)"])
            state.withLock { $0.serveError = "\(error)" }
        }
    }

    /// One `sim.control` request: `[method, body]`.
    func handle(_ frames: [[UInt8]]) -> [[UInt8]] {
        func refuse(_ text: String) -> [[UInt8]] {
            state.withLock { $0.refused += 1 }
            return [SimControl.error, Array(text.utf8)]
        }
        guard frames.count == 2, let method = SimControl.Method(rawValue: String(decoding: frames[0], as: UTF8.self)) else {
            return refuse("a sim.control request is two frames, a method (join, progress, report) and its JSON body")
        }
        do {
            switch method {
            case .join:
                let join = try SimControl.decode(SimControl.Join.self, frames[1])
                let outcome = state.withLock { state in
                    Self.join(join, run: run, agents: agents, joined: &state.joined, started: state.started != nil)
                }
                let joined = try outcome.get()
                logger.info("agent joined", metadata: ["flowbus.agent": "\(join.name)", "flowbus.index": "\(joined.index)"])
                return [SimControl.ok, SimControl.encode(joined)]
            case .progress:
                let progress = try SimControl.decode(SimControl.Progress.self, frames[1])
                guard (0..<agents).contains(progress.index) else { return refuse("no agent \(progress.index) in run \(run)") }
                state.withLock { $0.progress[progress.index] = progress }
                try? write(SimControl.progressKey(run, agent: progress.index), progress)
                return [SimControl.ok, Array("{}".utf8)]
            case .report:
                let report = try SimControl.decode(SimControl.Report.self, frames[1])
                guard (0..<agents).contains(report.index) else { return refuse("no agent \(report.index) in run \(run)") }
                state.withLock { $0.reports[report.index] = report }
                logger.info("agent reported", metadata: ["flowbus.agent": "\(report.name)", "flowbus.index": "\(report.index)"])
                return [SimControl.ok, Array("{}".utf8)]
            }
        } catch {
            return refuse("\(error)")
        }
    }

    /// Gives a joining agent its place: the same one when its join comes again (MDP retries),
    /// the next free one before the start, else a refusal saying why.
    static func join(
        _ join: SimControl.Join, run: String, agents: Int, joined: inout [String: Agent], started: Bool
    ) -> Result<SimControl.Joined, SimControlError> {
        if let known = joined[join.agent] { return .success(SimControl.Joined(run: run, index: known.index, of: agents)) }
        if started { return .failure(SimControlError("run \(run) has started without you; join the next one", refusal: true)) }
        guard joined.count < agents else {
            return .failure(SimControlError("run \(run) has its \(agents) agents already; start the coordinator with a larger --agents", refusal: true))
        }
        let agent = Agent(index: joined.count, name: join.name, id: join.agent)
        joined[join.agent] = agent
        return .success(SimControl.Joined(run: run, index: agent.index, of: agents))
    }

    /// The agents joined so far, in order.
    public var joined: [Agent] { state.withLock { $0.joined.values.sorted { $0.index < $1.index } } }

    /// Requests refused (malformed, or a join too many).
    public var refused: Int { state.withLock { $0.refused } }

    /// Waits until every agent joined; `tick` sees how many have, about once a second.
    public func waitForAgents(timeout: Duration, tick: @Sendable (Int) -> Void = { _ in }) async throws(SimControlError) {
        let deadline = ContinuousClock.now + timeout
        var lastTick = ContinuousClock.now
        while true {
            let (count, failure) = state.withLock { ($0.joined.count, $0.serveError) }
            if let failure { throw SimControlError("cannot serve sim.control: \(failure)") }
            if count >= agents { return }
            if ContinuousClock.now >= deadline {
                throw SimControlError("\(count) of \(agents) agents joined run \(run) within \(timeout); start the rest with `flowbus sim-agent --broker … --clone …` (see flowbus sim-agent --help)")
            }
            if ContinuousClock.now - lastTick >= .seconds(1) {
                tick(count)
                lastTick = .now
            }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Names the instant every agent starts its clock, `after` from now, and returns it.
    public func start(after: Duration = .seconds(2)) throws(SimControlError) -> ContinuousClock.Instant {
        let now = Date()
        let at = Int64((now.timeIntervalSince1970 + after / .seconds(1)) * 1000)
        state.withLock { $0.started = at }
        try write(SimControl.startKey(run), SimControl.RunStart(at: at))
        return ContinuousClock.now + after
    }

    /// The latest progress of each agent.
    public var progress: [SimControl.Progress] { state.withLock { $0.progress.values.sorted { $0.index < $1.index } } }

    /// Waits for every agent's report; returns the indexes still missing when `timeout` passed.
    public func waitForReports(timeout: Duration) async -> [Int] {
        let deadline = ContinuousClock.now + timeout
        while true {
            let missing = state.withLock { state in (0..<agents).filter { state.reports[$0] == nil } }
            if missing.isEmpty || ContinuousClock.now >= deadline { return missing }
            try? await Task.sleep(for: .milliseconds(100))
        }
    }

    /// The run as one: the agents' histograms and counts merged, thresholds judged on the whole.
    public func result(start: ContinuousClock.Instant) -> SimResult {
        let reports = state.withLock { $0.reports.values.sorted { $0.index < $1.index } }
        let elapsed = Duration.milliseconds(Int64((reports.map(\.seconds).max() ?? 0) * 1000))
        let metrics = SimMetrics(start: start)
        for report in reports { metrics.merge(report.metrics) }
        let usersStarted = reports.reduce(0) { $0 + $1.usersStarted }
        let figures = reports.map(\.simulator)
        let cpu = figures.reduce(0) { $0 + $1.cpuSeconds }
        let grown = figures.reduce(0) { $0 + max(0, $1.residentBytes - $1.residentBytesAtStart) }
        let peakUsers = figures.reduce(0) { $0 + $1.peakUsers }
        let hash = SimSchedule.hash(plan, users: plan.load.isOpen ? usersStarted : Int(plan.load.peak))
        var result = metrics.result(
            plan: plan, runTag: run, scheduleHash: hash, elapsed: elapsed, usersStarted: usersStarted,
            simulator: SimResult.SimulatorFigures(
                cpuSeconds: cpu, cpuMicrosecondsPerIntent: 0, residentBytes: figures.reduce(0) { $0 + $1.residentBytes },
                residentBytesAtStart: figures.reduce(0) { $0 + $1.residentBytesAtStart }, bytesPerUser: peakUsers > 0 ? grown / peakUsers : 0,
                peakUsers: peakUsers, lanes: figures.reduce(0) { $0 + $1.lanes }))
        result.agents = reports.map { report in
            let snapshot = report.metrics
            let agentIntents = snapshot.histograms.filter { snapshot.families[$0.key] == .intent }.reduce(UInt64(0)) { $0 + $1.value.counts.reduce(0, +) }
            return SimResult.AgentSummary(
                index: report.index, name: report.name, usersStarted: report.usersStarted, intents: Int(agentIntents),
                journeysCompleted: snapshot.journeysCompleted, cpuSeconds: report.simulator.cpuSeconds, residentBytes: report.simulator.residentBytes)
        }
        return result
    }

    public func stop() {
        let first = state.withLock { state -> Bool in
            let was = state.stopping
            state.stopping = true
            return !was
        }
        // The worker looks at `stopping` every 100 ms.
        if first { _ = served.wait(timeout: .now() + 2) }
        clone.stop()
    }
}
