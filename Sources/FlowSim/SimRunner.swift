import FlowClient
import FlowProtocol
import Foundation
import Logging
import Synchronization
import ZeroMQ

/// Plays a plan on a running host: simulated users, each a task playing journeys with pauses,
/// all sharing one request pool and one Clone feed, so a session costs its view and its log, not
/// sockets and threads.
public final class SimRunner: Sendable {
    public struct Options: Sendable {
        public var endpoints: BusEndpoints
        /// Requests in flight at once (threads of the shared pool).
        public var lanes = 32
        /// Tells apart this run's accounts and sessions from an earlier run's on the same host
        /// (`${run}` in scripts; `${unique}` starts with it).
        public var runTag = String(UUID().uuidString.prefix(6)).lowercased()
        /// Journeys still running at the end get this long to finish before they are cut short.
        public var grace: Duration = .seconds(10)
        /// The user numbers this runner plays, of `0..<peak`: an agent's share of a run.
        public var share: (index: Int, of: Int) = (0, 1)
        /// Called as each journey ends, before its session's client goes (a chaos check reads
        /// the client's log here). With it, clients keep their whole log, not the last 64 events.
        public var journeyEnded: (@Sendable (JourneyEnd) -> Void)?
        /// One Clone agent for every session (`SharedSessionFeed`), as the host's own user may
        /// read them all. Off, each session has an agent of its own: a client of a closed host
        /// (an agent on another machine) reads one session per connection.
        public var sharedFeed = true
        /// Follow the coordinators' instances (`/c/`), which a chaos check reads; a client of a
        /// closed host may not.
        public var followCoordinators = true

        public init(endpoints: BusEndpoints) {
            self.endpoints = endpoints
        }
    }

    /// One journey of one user, as it ended.
    public struct JourneyEnd {
        public var name: String
        public var script: DriveScript
        /// The journey's driver: `client` is the session the journey played on.
        public var journey: Journey
        public var user: Int
        /// The user's journey number from 1; 0 for its setup (also a setup played again).
        public var count: Int
        public var passed: Bool
        /// What went wrong, when it did not pass.
        public var failure: String?
        /// Whether the run's end stopped it (it was not judged).
        public var cutShort: Bool
    }

    public let plan: SimPlan
    public let options: Options
    public let metrics: SimMetrics
    let logger: Logger
    private let control = Mutex(Control())

    struct Control {
        var running = 0
        var started = 0
        var stopping = false
        var journeysEnded = 0
    }

    /// `start`: when the run's clock starts (an agent's, the instant its coordinator named, so
    /// every agent's seconds line up); the runner is to be started then.
    public init(plan: SimPlan, options: Options, start: ContinuousClock.Instant = .now, logger: Logger = Logger(label: "flowbus.sim")) {
        self.plan = plan
        self.options = options
        self.logger = logger
        metrics = SimMetrics(start: start)
    }

    /// Users running now.
    public var running: Int { control.withLock { $0.running } }

    /// Users started so far (open model: arrivals).
    public var started: Int { control.withLock { $0.started } }

    /// Runs the plan to its end; `tick` is called about once a second (for a progress line).
    public func run(tick: @escaping @Sendable (Duration) -> Void = { _ in }) async throws(SessionClientError) {
        var clientOptions = SessionClientOptions()
        clientOptions.name = "sim/\(options.runTag)"
        // A chaos check reads every event of a session; otherwise the last ones are enough.
        clientOptions.maxEvents = options.journeyEnded == nil ? 64 : 10_000
        clientOptions.followCoordinators = options.followCoordinators
        // Sessions of a run are short; touching them would only add load.
        clientOptions.keepAlive = false
        let connection = try BusConnection(endpoints: options.endpoints, options: clientOptions, lanes: options.lanes, logger: logger)
        defer { connection.stop() }
        let feed = options.sharedFeed
            ? try await SharedSessionFeed(endpoints: options.endpoints, context: connection.context, logger: logger) : nil
        defer { feed?.stop() }
        let shared = (connection: connection, feed: feed)
        let start = metrics.start
        logger.info("sim started", metadata: [
            "flowbus.plan": "\(plan.name)", "flowbus.seed": "\(plan.seed)", "flowbus.run": "\(options.runTag)",
        ])
        await withTaskGroup(of: Void.self) { group in
            switch plan.load {
            case .closed:
                group.addTask { await self.closedModel(shared: shared, start: start) }
            case .open:
                group.addTask { await self.openModel(shared: shared, start: start) }
            }
            group.addTask {
                while !self.isStopping {
                    try? await Task.sleep(for: .seconds(1))
                    let elapsed = ContinuousClock.now - start
                    self.metrics.users(self.running)
                    tick(elapsed)
                }
            }
            await group.waitForAll()
        }
    }

    var isStopping: Bool { control.withLock { $0.stopping } }

    /// Whether the run is over: its duration passed, or its journey limit was reached.
    private func shouldStop(start: ContinuousClock.Instant) -> Bool {
        if ContinuousClock.now - start >= plan.duration { return true }
        if let limit = plan.journeyLimit, control.withLock({ $0.journeysEnded }) >= limit { return true }
        return false
    }

    /// Whether user `index` is this runner's to play.
    private func plays(_ index: Int) -> Bool { index % options.share.of == options.share.index }

    private func closedModel(shared: (connection: BusConnection, feed: SharedSessionFeed?), start: ContinuousClock.Instant) async {
        await withTaskGroup(of: Void.self) { users in
            var next = 0
            while !shouldStop(start: start) {
                let wanted = Int(plan.load.target(at: ContinuousClock.now - start).rounded(.down))
                while next < wanted {
                    let index = next
                    next += 1
                    guard plays(index) else { continue }
                    control.withLock { $0.running += 1; $0.started += 1 }
                    users.addTask {
                        await self.user(index, shared: shared, start: start, stayWhile: { [self] in
                            !self.shouldStop(start: start) && Double(index) < self.plan.load.target(at: ContinuousClock.now - start)
                        })
                        self.control.withLock { $0.running -= 1 }
                    }
                }
                try? await Task.sleep(for: .milliseconds(50))
            }
            await finish(users: &users)
        }
    }

    private func openModel(shared: (connection: BusConnection, feed: SharedSessionFeed?), start: ContinuousClock.Instant) async {
        await withTaskGroup(of: Void.self) { users in
            var arrivals = ArrivalClock(plan: plan)
            var index = 0
            while let at = arrivals.next(), !shouldStop(start: start) {
                let due = start + at
                if due > .now { try? await Task.sleep(until: due) }
                if shouldStop(start: start) { break }
                let user = index
                index += 1
                guard plays(user) else { continue }
                control.withLock { $0.running += 1; $0.started += 1 }
                users.addTask {
                    // One journey, timed from its scheduled arrival: a simulator or host that
                    // falls behind shows in the latencies instead of hiding (coordinated omission).
                    await self.user(user, shared: shared, start: start, scheduled: due, stayWhile: { false })
                    self.control.withLock { $0.running -= 1 }
                }
            }
            while !shouldStop(start: start) { try? await Task.sleep(for: .milliseconds(50)) }
            await finish(users: &users)
        }
    }

    /// Stops starting journeys, gives those running `grace` to end, then cuts the rest short.
    private func finish(users: inout TaskGroup<Void>) async {
        control.withLock { $0.stopping = true }
        let deadline = ContinuousClock.now + options.grace
        while running > 0, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(50)) }
        users.cancelAll()
        await users.waitForAll()
    }

    /// One user: its setup journey, then journeys while `stayWhile` holds (at least one).
    private func user(
        _ index: Int, shared: (connection: BusConnection, feed: SharedSessionFeed?), start: ContinuousClock.Instant,
        scheduled: ContinuousClock.Instant? = nil, stayWhile: @Sendable () -> Bool
    ) async {
        var schedule = UserSchedule(plan: plan, user: index)
        var clientOptions = shared.connection.options
        clientOptions.name = "sim/\(options.runTag)/\(index)"
        let journey = Journey(endpoints: options.endpoints, options: clientOptions, defaultTimeout: plan.stepTimeout, shared: shared, logger: logger)
        journey.minimumStepTimeout = plan.stepTimeout
        journey.setVariable("run", options.runTag)
        journey.setVariable("user", "\(index)")
        // The user's own name for the whole run (its account), where ${unique} changes per journey.
        journey.setVariable("account", "\(options.runTag)u\(index)")
        for (name, value) in schedule.data { journey.setVariable(name, value) }
        defer { journey.stop() }
        if let setup = plan.setup {
            journey.setVariable("unique", "\(options.runTag)u\(index)s")
            let pauses = schedule.setupPauses()
            guard await play(setup, name: "setup", pauses: pauses, on: journey, user: index, count: 0, scheduled: scheduled ?? .now) else { return }
        }
        var iteration = 0
        var gaveUp = false
        repeat {
            if Task.isCancelled || isStopping { return }
            let turn = schedule.next()
            let chosen = plan.journeys[turn.journey]
            if gaveUp, let setup = plan.setup, !Self.opensItsOwnSession(chosen.script) {
                // The user gave up on its last journey and closed the session the setup opened
                // (`play`): it starts over on a new one, as it began, instead of acting on the
                // closed one (refused: no flow is live in a closed session).
                journey.setVariable("unique", "\(options.runTag)u\(index)s\(iteration)")
                let pauses = schedule.setupPauses(restartingAfter: iteration)
                guard await play(setup, name: "setup", pauses: pauses, on: journey, user: index, count: 0, scheduled: .now) else { return }
            }
            journey.setVariable("unique", "\(options.runTag)u\(index)j\(iteration)")
            let passed = await play(chosen.script, name: chosen.name, pauses: turn.pauses, on: journey, user: index, count: iteration + 1,
                                    scheduled: iteration == 0 ? (scheduled ?? .now) : .now)
            gaveUp = !passed
            iteration += 1
        } while stayWhile()
    }

    /// Whether `script` begins on a session of its own (opens or attaches one) rather than the
    /// one its user is on.
    static func opensItsOwnSession(_ script: DriveScript) -> Bool {
        switch script.steps.first?.step {
        case .open, .attach: true
        default: false
        }
    }

    /// Plays one journey with its pauses, timing each step from when it was due; returns whether
    /// it passed, after telling `Options.journeyEnded`.
    private func play(
        _ script: DriveScript, name: String, pauses: [Duration], on journey: Journey, user: Int, count: Int, scheduled: ContinuousClock.Instant
    ) async -> Bool {
        let failure = await playSteps(script, name: name, pauses: pauses, on: journey, scheduled: scheduled)
        options.journeyEnded?(JourneyEnd(
            name: name, script: script, journey: journey, user: user, count: count, passed: failure == nil, failure: failure,
            cutShort: failure != nil && Task.isCancelled))
        if failure != nil, !Task.isCancelled, journey.client?.view.record?.open == true {
            // A person who gives up leaves: the session is closed, not left to idle expiry.
            try? await journey.close()
        }
        return failure == nil
    }

    /// Plays the steps; nil when the journey passed, else what stopped it.
    private func playSteps(_ script: DriveScript, name: String, pauses: [Duration], on journey: Journey, scheduled: ContinuousClock.Instant) async -> String? {
        let journeyStart = scheduled
        var due = scheduled
        var pendingStep: (name: String, due: ContinuousClock.Instant)?
        for (offset, step) in script.steps.enumerated() {
            let pause = offset < pauses.count ? pauses[offset] : .zero
            if pause > .zero {
                due = max(due, .now) + pause
                do { try await Task.sleep(until: due) } catch {
                    metrics.journeyEnded(.cutShort)
                    return "cut short at the end of the run, before step \(offset + 1)"
                }
            } else {
                due = max(due, .now)
            }
            if Task.isCancelled {
                metrics.journeyEnded(.cutShort)
                return "cut short at the end of the run, before step \(offset + 1)"
            }
            let isRequest: Bool
            switch step.step {
            case .send, .call:
                isRequest = true
                metrics.requestSent()
            default:
                isRequest = false
            }
            do {
                try await journey.play(step)
            } catch {
                if Task.isCancelled {
                    metrics.journeyEnded(.cutShort)
                    return "cut short at the end of the run, in step \(offset + 1) (\(step.label))"
                }
                let (kind, timedOut) = Self.kind(of: error, step: step.step)
                metrics.error(kind, example: "\(name) \(step.label): \(error)", request: isRequest)
                metrics.journeyEnded(timedOut ? .timedOut : .failed)
                control.withLock { $0.journeysEnded += 1 }
                return "step \(offset + 1) (\(step.label)): \(error)"
            }
            let now = ContinuousClock.now
            switch step.step {
            case .send(let action, _, _, _):
                metrics.record(.intent, "intent \(action)", now - due, at: now)
                pendingStep = ("\(action)→", due)
            case .expect(let expectation):
                if let pending = pendingStep {
                    metrics.record(.step, pending.name + (expectation.screen ?? expectation.stateOf ?? "screen"), now - pending.due, at: now)
                    pendingStep = nil
                }
            default:
                break
            }
            due = now
        }
        let end = ContinuousClock.now
        metrics.record(.journey, "journey \(name)", end - journeyStart, at: end)
        metrics.journeyEnded(.completed, at: end)
        control.withLock { $0.journeysEnded += 1 }
        return nil
    }

    /// An error's kind for the report's table, and whether it was a wait that ran out.
    static func kind(of error: any Error, step: DriveStep) -> (String, Bool) {
        if error is SessionWaitTimeout { return ("\(step.name) timed out", true) }
        if let failure = error as? SessionClientError {
            switch failure {
            case .noReply(let service, _): return ("no reply from \(service)", true)
            case .refused(let service, _, let wire): return ("\(service) refused (\(wire.code))", false)
            case .unknownAction(let action, let screen, _): return ("\(action) not offered on \(screen)", false)
            case .noSnapshot: return ("no snapshot", true)
            default: return ("\(step.name) failed", false)
            }
        }
        let text = "\(error)"
        if text.contains("refused, ") { return ("\(step.name) refused", false) }
        return ("\(step.name) failed", false)
    }
}

/// This process's CPU time and resident size, for the simulator's own figures.
public enum ProcessFigures {
    /// User plus system CPU seconds so far.
    public static var cpuSeconds: Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
            + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    }

    /// Resident bytes now (VmRSS), 0 where /proc is not there.
    public static var residentBytes: Int {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kilobytes = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        else { return 0 }
        return kilobytes * 1024
    }
}

extension SimRunner {
    /// Plays the plan and sums it up; `tick` sees the elapsed time about once a second.
    public func runToResult(tick: @escaping @Sendable (Duration) -> Void = { _ in }) async throws(SessionClientError) -> SimResult {
        let cpuAtStart = ProcessFigures.cpuSeconds
        let residentAtStart = ProcessFigures.residentBytes
        let peakResident = Mutex((bytes: residentAtStart, users: 0))
        let runner = self
        try await run { elapsed in
            let resident = ProcessFigures.residentBytes
            let users = runner.running
            peakResident.withLock { peak in
                if users >= peak.users { peak = (max(peak.bytes, resident), users) }
            }
            tick(elapsed)
        }
        let elapsed = ContinuousClock.now - metrics.start
        let cpu = ProcessFigures.cpuSeconds - cpuAtStart
        let peak = peakResident.withLock { $0 }
        let hash = SimSchedule.hash(plan, users: plan.load.isOpen ? started : Int(plan.load.peak))
        return metrics.result(
            plan: plan, runTag: options.runTag, scheduleHash: hash, elapsed: elapsed, usersStarted: started,
            simulator: SimResult.SimulatorFigures(
                cpuSeconds: cpu, cpuMicrosecondsPerIntent: 0, residentBytes: peak.bytes, residentBytesAtStart: residentAtStart,
                bytesPerUser: peak.users > 0 ? max(0, peak.bytes - residentAtStart) / peak.users : 0, peakUsers: peak.users, lanes: options.lanes))
    }
}
