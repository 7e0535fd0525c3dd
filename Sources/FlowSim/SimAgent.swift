import Clone
import FlowClient
import Foundation
import Logging
import Majordomo
import Synchronization
import ZeroMQ

/// One agent of a run across machines (`flowbus sim-agent`): joins the coordinator over
/// `sim.control`, reads the plan and the start instant from Clone (`/sim/<run>/`), plays its
/// share of the users from that instant, reports progress once a second, and sends its
/// measurements when done. On another machine it is a CURVE client of a closed host: each
/// session then has a Clone agent of its own (a client reads one session per connection).
public final class SimAgent: Sendable {
    public struct Options: Sendable {
        public var endpoints: BusEndpoints
        /// This agent's name in the coordinator's lines (default: the host name).
        public var name = ProcessInfo.processInfo.hostName
        public var lanes = 32
        /// How long to keep asking to join while no coordinator serves `sim.control`.
        public var joinTimeout: Duration = .seconds(60)
        /// How long to wait for the start once joined (the other agents joining).
        public var startTimeout: Duration = .seconds(300)

        public init(endpoints: BusEndpoints) {
            self.endpoints = endpoints
        }
    }

    public let options: Options
    let logger: Logger
    let context: ZMQContext
    let id = UUID().uuidString
    private let client: Mutex<MajordomoClient?>

    public init(options: Options, logger: Logger = Logger(label: "flowbus.sim.agent")) throws(SimControlError) {
        self.options = options
        self.logger = logger
        do { context = try ZMQContext() } catch { throw SimControlError("cannot make a ZeroMQ context: \(error)") }
        var configuration = ClientConfiguration()
        configuration.timeout = .seconds(3)
        configuration.tries = 1
        do {
            if let curve = try options.endpoints.curve() {
                configuration.curveServerKey = curve.serverKey
                configuration.curveKeyPair = curve.keyPair
            }
            client = Mutex(try MajordomoClient(context: context, endpoint: options.endpoints.broker, configuration: configuration, logger: logger))
        } catch {
            throw SimControlError("cannot reach the broker at \(options.endpoints.broker): \(error)")
        }
    }

    /// Sends a `sim.control` request; the reply's body, or why there is none.
    func call(_ method: SimControl.Method, _ body: [UInt8], timeout: Duration = .seconds(3)) throws(SimControlError) -> [UInt8] {
        let reply: [[UInt8]]
        do {
            reply = try client.withLock { client throws(MajordomoClientError) -> [[UInt8]] in
                guard let client else { throw .invalidService("stopped") }
                return try client.request(service: SimControl.service, body: [Array(method.rawValue.utf8), body], timeout: timeout)
            }
        } catch {
            throw SimControlError("no answer from sim.control to \(method.rawValue) (\(error)); is `flowbus sim PLAN --agents N` running on the host?")
        }
        return try SimControl.body(of: reply, method: method)
    }

    /// Asks to join until a coordinator answers or `joinTimeout` passes.
    public func join(progress: @Sendable (String) -> Void = { _ in }) async throws(SimControlError) -> SimControl.Joined {
        let deadline = ContinuousClock.now + options.joinTimeout
        let request = SimControl.encode(SimControl.Join(agent: id, name: options.name))
        var lastError: SimControlError?
        while ContinuousClock.now < deadline {
            do {
                return try SimControl.decode(SimControl.Joined.self, try call(.join, request))
            } catch {
                if error.isRefusal { throw error }
                if lastError?.description != error.description { progress("waiting for the run's coordinator: \(error)") }
                lastError = error
                try? await Task.sleep(for: .seconds(1))
            }
        }
        throw lastError ?? SimControlError("no coordinator answered within \(options.joinTimeout)")
    }

    /// The run's plan and start instant, from Clone (`/sim/<run>/`).
    public func readRun(_ joined: SimControl.Joined) async throws(SimControlError) -> (plan: SimPlan, start: ContinuousClock.Instant) {
        var configuration = CloneAgentConfiguration(subtrees: [SimControl.subtree(joined.run)])
        let clone: CloneAgent
        do {
            configuration.curve = try options.endpoints.curve()
            clone = try CloneAgent(context: context, endpoints: options.endpoints.clone, configuration: configuration, logger: logger)
        } catch {
            throw SimControlError("cannot reach the Clone server at \(options.endpoints.clone.snapshot): \(error)")
        }
        defer { clone.stop() }
        let deadline = ContinuousClock.now + options.startTimeout
        var plan: SimPlan?
        while ContinuousClock.now < deadline {
            if let refusal = clone.refusal { throw SimControlError("the Clone server refused \(refusal.subtree): \(refusal.reason)") }
            if plan == nil, let entry = clone.get(SimControl.planKey(joined.run)) {
                let sent = try SimControl.decode(SimControl.RunPlan.self, entry.value)
                do {
                    plan = try SimPlan.parse(yaml: sent.text, directory: "/", seed: sent.seed, scripts: sent.scripts)
                } catch {
                    throw SimControlError("the run's plan does not read here: \(error)")
                }
            }
            if let plan, let entry = clone.get(SimControl.startKey(joined.run)) {
                let start = try SimControl.decode(SimControl.RunStart.self, entry.value)
                let wait = Double(start.at) / 1000 - Date().timeIntervalSince1970
                return (plan, ContinuousClock.now + .milliseconds(Int64(wait * 1000)))
            }
            try? await Task.sleep(for: .milliseconds(50))
        }
        throw SimControlError("run \(joined.run) did not start within \(options.startTimeout) (the coordinator starts it once all its agents joined)")
    }

    /// Plays this agent's share from `start`, reporting progress once a second, then sends its
    /// measurements; returns its own result (its share only).
    public func play(
        _ plan: SimPlan, joined: SimControl.Joined, start: ContinuousClock.Instant, tick: @escaping @Sendable (SimRunner, Duration) -> Void = { _, _ in }
    ) async throws(SimControlError) -> SimResult {
        var runnerOptions = SimRunner.Options(endpoints: options.endpoints)
        runnerOptions.lanes = options.lanes
        runnerOptions.runTag = joined.run
        runnerOptions.share = (joined.index, joined.of)
        // The host's own user reads every session through one agent; a client, one per session.
        let local = options.endpoints.capabilities != nil
        runnerOptions.sharedFeed = local
        runnerOptions.followCoordinators = local
        let runner = SimRunner(plan: plan, options: runnerOptions, start: start, logger: logger)
        if start > .now { try? await Task.sleep(until: start) }
        let progressQueue = DispatchQueue(label: "flowbus-sim-agent-progress")
        let result: SimResult
        do {
            result = try await runner.runToResult { [self] elapsed in
                let figures = runner.metrics.progress()
                let progress = SimControl.Progress(
                    index: joined.index, running: runner.running, intentsLastSecond: figures.intentsLastSecond, errors: figures.errors,
                    journeysCompleted: figures.journeysCompleted, journeysFailed: figures.journeysFailed,
                    journeysTimedOut: figures.journeysTimedOut, stepP99: figures.stepP99)
                progressQueue.async { _ = try? self.call(.progress, SimControl.encode(progress), timeout: .milliseconds(900)) }
                tick(runner, elapsed)
            }
        } catch {
            throw SimControlError("the run could not start here: \(error)")
        }
        let report = SimControl.Report(
            index: joined.index, name: options.name, metrics: runner.metrics.snapshot(), usersStarted: runner.started, simulator: result.simulator,
            seconds: result.seconds)
        let body = SimControl.encode(report)
        var lastError: SimControlError?
        for _ in 0..<5 {
            do {
                _ = try call(.report, body, timeout: .seconds(5))
                return result
            } catch {
                lastError = error
                logger.warning("sending the report failed; trying again", metadata: ["flowbus.error": "\(error)"])
            }
        }
        throw lastError ?? SimControlError("the report was not taken")
    }

    public func stop() {
        client.withLock { $0 = nil }
    }
}
