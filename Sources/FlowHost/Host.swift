import Clone
import Dispatch
import FlowProtocol
import Foundation
import Logging
import Majordomo
import MessagePath
import Supervision
import Synchronization
import ZeroMQ

/// The flowbus host: the Majordomo broker and the Clone server embedded, the plugins of the
/// manifest spawned and supervised, and a control socket for `ps`, `down` and `fault`.
public final class Host: Sendable {
    public let configuration: HostConfiguration
    private let logger: Logger
    private let stopRequest = DispatchSemaphore(value: 0)
    private let stopping = Atomic<Bool>(false)
    /// The fault plan being played, if any (`flowbus fault plan`, `flowbus chaos run`).
    private let planRunner = Mutex<FaultPlanRunner?>(nil)
    /// Faults asked for one at a time (`flowbus fault kill|stop|clock|partition`), beside the plan.
    private let singleRunners = Mutex<[FaultPlanRunner]>([])
    /// The CPU `run` pinned this process to (`Placement.pinned`).
    private let pinned = Mutex<Int?>(nil)
    var pinnedCPU: Int? { pinned.withLock { $0 } }

    public init(configuration: HostConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    /// Pinned placement: every thread of this process on one CPU it may use, and the CPUs the
    /// plugins get in turn from the next one. Which CPU follows from the host's pid, so hosts
    /// started side by side (tests, several apps) spread over the CPUs instead of piling onto
    /// the first. Nil for shared placement, or when the CPUs cannot be read.
    private func placeOnCPUs() -> CPUPlacement? {
        let asked = "--placement \(configuration.placement.rawValue)"
        guard configuration.placement != .shared else { return nil }
        let allowed = CPUPlacement.ofThisProcess()
        if configuration.placement == .auto {
            guard let count = allowed?.cpus.count else {
                logger.info("placement shared (--placement auto): the host could not read which CPUs it may use, so the kernel places every process")
                return nil
            }
            guard Placement.automatic(allowedCPUs: count) == .pinned else {
                logger.info("placement shared (--placement auto): the host may use \(count) CPU\(count == 1 ? "" : "s"), and auto pins only on two; --placement pinned pins anyway")
                return nil
            }
        }
        guard let plan = allowed?.starting(at: Int(getpid())) else {
            logger.warning("\(asked): the host could not read which CPUs it may use; every process runs where the kernel puts it, as with --placement shared")
            return nil
        }
        if let error = CPUPlacement.pinThisProcess(to: plan.hostCPU) {
            logger.warning("\(asked): not every host thread could be pinned to CPU \(plan.hostCPU) (\(String(cString: strerror(error)))); the plugins are pinned all the same")
        }
        pinned.withLock { $0 = plan.hostCPU }
        let why = configuration.placement == .auto ? " (--placement auto: the host may use two CPUs; --placement shared lets the kernel place them)" : ""
        logger.info("placement pinned: the host on one CPU, each plugin process on one, in turn\(why)", metadata: [
            "flowbus.cpu": "\(plan.hostCPU)", "flowbus.cpus": "\(plan.cpus.map(String.init).joined(separator: ","))",
        ])
        return plan
    }

    /// Asks a running `run()` to stop, as SIGTERM or `flowbus down` do.
    public func requestStop() {
        if !stopping.exchange(true, ordering: .acquiringAndReleasing) {
            stopRequest.signal()
        }
    }

    /// Starts everything, blocks until SIGINT/SIGTERM or a `down` request, then stops
    /// the plugins in reverse manifest order and the bus after them.
    /// `onReady` runs once everything is up, with the descriptor the host announced.
    public func run(onReady: (HostDescriptor) -> Void = { _ in }) throws {
        StopSignals.onSignal { [self] number in
            logger.notice("signal received; stopping", metadata: ["flowbus.signal": "\(number)"])
            requestStop()
        }
        let directory = configuration.runDirectory
        if let live = try directory.liveHost(), live.pid != getpid() {
            throw HostError.alreadyRunning(pid: live.pid, runDirectory: directory.path)
        }
        try configuration.validateExposure()
        let manifest = try Manifest.parse(yaml: configuration.manifestYAML, baseDirectory: configuration.manifestDirectory)
        try directory.create()
        // Before the bus makes its threads: they inherit the CPU.
        let cpus = placeOnCPUs()

        let context = try ZMQContext()
        // The supervisor is made below; the ZAP handler names plugins through it once it exists.
        let supervisorBox = Mutex<Supervisor?>(nil)
        // The session-capability key lives in the run directory: capabilities stay good across a
        // restart of the host on it, and the user's own tools can make theirs.
        let keyText = try directory.sessionKey { CapabilityKey.generate().hex }
        guard let capabilities = CapabilityKey(hex: keyText) else {
            throw RunDirectoryError.untrusted(path: directory.sessionKeyPath, reason: "it does not hold a 64-hex-digit key (a damaged file)")
        }
        let security = try BusSecurity.start(configuration: configuration, context: context, logger: logger, capabilities: capabilities) { pid in
            supervisorBox.withLock { $0?.pluginName(pid: pid) }
        }
        let faults = FaultRules(describe: FaultDetailsReader.details)
        let history = SessionHistory(limits: configuration.historyLimits)
        if history.isRecording { faults.observe(history.faultObserver) }
        // Closed, on tcp: the host also listens on ipc in the run directory, where the kernel tells
        // it each peer's pid, so its plugins (its children) and the user's own tools connect there
        // and are known for what they are (without CURVE: only the owner reaches the directory);
        // tcp peers are clients, with an allow-listed CURVE key where CURVE is on.
        let local = extraLocalEndpoints(security: security)
        let broker = try startBroker(context: context, security: security, faults: faults, history: history, local: local)
        defer { broker.stop() }
        let clone = try startClone(context: context, security: security, faults: faults, history: history, local: local)
        defer { clone.stop() }

        let endpoints = HostEndpoints(
            broker: broker.endpoints.first ?? configuration.resolvedBrokerEndpoint,
            cloneSnapshot: clone.endpoints.snapshot,
            clonePublisher: clone.endpoints.publisher,
            cloneCollector: clone.endpoints.collector,
            control: directory.controlEndpoint
        )
        var announced = HostDescriptor(
            pid: getpid(), startedAt: Date(), runDirectory: directory.path,
            endpoints: endpoints, serverPublicKey: security.curve?.serverKeys.publicKey.z85,
            access: security.access == nil ? .open : .closed)
        if local.broker != nil || local.clone != nil {
            announced.localEndpoints = HostEndpoints(
                broker: local.broker ?? endpoints.broker,
                cloneSnapshot: local.clone?.snapshot ?? endpoints.cloneSnapshot,
                clonePublisher: local.clone?.publisher ?? endpoints.clonePublisher,
                cloneCollector: local.clone?.collector ?? endpoints.cloneCollector,
                control: directory.controlEndpoint)
        }
        let descriptor = announced

        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("FLOWBUS_") }
        environment.merge(descriptor.endpointsOnThisMachine.environment) { $1 }
        environment[BusVariables.runDirectory] = directory.path
        environment[BusVariables.heartbeatMilliseconds] = "\(configuration.heartbeatInterval.components.seconds * 1000 + configuration.heartbeatInterval.components.attoseconds / 1_000_000_000_000_000)"
        environment.merge(security.pluginEnvironment) { $1 }
        let supervisor = Supervisor(
            manifest: manifest, environment: environment,
            commandSearchPath: configuration.pluginSearchPath,
            logDirectory: URL(fileURLWithPath: directory.logDirectory), placement: cpus, logger: logger)
        supervisorBox.withLock { $0 = supervisor }
        // Before any plugin starts: it clears the fault orders an earlier run left.
        let processes = ProcessFaultInjector(
            supervisor: supervisor, runDirectory: directory.path, history: history.isRecording ? history : nil,
            logger: logger.with(component: "faults"))

        // FLOWBUS_MEMORY_TRIM=off keeps the heap as glibc leaves it: the baseline of the host-churn benchmark.
        let memory = MemoryTrimmer.start(
            trimming: ProcessInfo.processInfo.environment["FLOWBUS_MEMORY_TRIM"] != "off", logger: logger.with(component: "memory"))
        defer { memory.stop() }
        let control = try ControlServer.start(context: context, endpoint: directory.controlEndpoint, logger: logger) {
            [self] request in
            ControlHandler(
                host: self, descriptor: descriptor, supervisor: supervisor, broker: broker, clone: clone,
                faults: faults, processes: processes, security: security, history: history, memory: memory
            ).handle(request)
        }
        defer { control.stop() }
        try directory.writeDescriptor(descriptor)
        defer { directory.removeDescriptor() }

        try supervisor.start()
        let heartbeats = HeartbeatBridge.start(broker: broker, supervisor: supervisor)
        logger.info("flowbus host ready", metadata: [
            "flowbus.run_dir": "\(directory.path)", "flowbus.broker": "\(endpoints.broker)",
            "flowbus.clone": "\(endpoints.cloneSnapshot)", "flowbus.plugins": "\(manifest.plugins.count)",
        ])
        onReady(descriptor)

        stopRequest.wait()
        logger.info("flowbus host stopping: plugins first, in reverse manifest order")
        // A plugin a plan stopped is woken first, so it can take its SIGTERM.
        cancelPlan()
        heartbeats.stop()
        supervisor.stop()
        security.authenticator?.stop()
        logger.info("flowbus host stopped")
    }

    /// Plays `plan` from now, ending any plan already playing.
    func play(_ plan: FaultPlan, faults: FaultRules, processes: ProcessFaultInjector) {
        cancelPlan()
        let runner = FaultPlanRunner(plan: plan, faults: faults, processes: processes, logger: logger.with(component: "faults"))
        planRunner.withLock { $0 = runner }
        runner.start()
    }

    /// Plays a one-event plan beside the plan playing, which it leaves alone (a fault asked for by hand).
    func playBeside(_ plan: FaultPlan, faults: FaultRules, processes: ProcessFaultInjector) {
        let runner = FaultPlanRunner(plan: plan, faults: faults, processes: processes, logger: logger.with(component: "faults"))
        singleRunners.withLock { runners in
            runners.removeAll { $0.isFinished }
            runners.append(runner)
        }
        runner.start(fresh: false)
        runner.waitUntilBegun()
    }

    /// Ends the plan playing and the faults asked for by hand, if any, undoing what they did; the
    /// plan that was playing (or ended).
    @discardableResult
    func cancelPlan() -> FaultPlan? {
        let runner = planRunner.withLock { runner in
            defer { runner = nil }
            return runner
        }
        runner?.cancel()
        for single in singleRunners.withLock({ runners in defer { runners = [] }; return runners }) { single.cancel() }
        return runner?.plan
    }

    /// The plan playing or last played, and whether it has ended.
    var plan: (plan: FaultPlan, finished: Bool)? {
        planRunner.withLock { runner in runner.map { ($0.plan, $0.isFinished) } }
    }

    /// The run directory's ipc endpoints the host binds besides its public ones (nil where those
    /// are ipc already, or when the bus is open, where peers are not told apart).
    private func extraLocalEndpoints(security: BusSecurity) -> (broker: String?, clone: CloneEndpoints?) {
        guard security.access != nil else { return (nil, nil) }
        let directory = configuration.runDirectory
        let broker = configuration.resolvedBrokerEndpoint.hasPrefix("ipc://") ? nil : directory.defaultBrokerEndpoint
        let clone = configuration.resolvedCloneBase.hasPrefix("ipc://") ? nil : try? CloneEndpoints(base: directory.defaultCloneBase)
        return (broker, clone)
    }

    private func startBroker(context: ZMQContext, security: BusSecurity, faults: FaultRules, history: SessionHistory, local: (broker: String?, clone: CloneEndpoints?)) throws -> BrokerHandle {
        var brokerConfiguration = BrokerConfiguration()
        brokerConfiguration.heartbeatInterval = configuration.heartbeatInterval
        brokerConfiguration.heartbeatLiveness = configuration.heartbeatLiveness
        brokerConfiguration.maxMessageBytes = configuration.maxMessageBytes
        brokerConfiguration.requestExpiry = configuration.unknownServiceExpiry
        brokerConfiguration.busyPoll = configuration.brokerBusyPoll
        brokerConfiguration.busyPollBudget = configuration.brokerBusyPollBudget
        brokerConfiguration.rejectionReply = { rejection in ErrorReplies.body(for: rejection) }
        if history.isRecording { brokerConfiguration.observer = history.brokerObserver }
        brokerConfiguration.curveSecretKey = security.curve?.serverKeys.secretKey
        brokerConfiguration.zapDomain = security.zapDomain
        brokerConfiguration.access = security.access
        brokerConfiguration.plainIPC = security.access != nil
        return try MajordomoBroker.start(
            context: context, configuration: brokerConfiguration,
            endpoints: [configuration.resolvedBrokerEndpoint] + [local.broker].compactMap { $0 },
            faults: faults,
            logger: logger.with(component: "broker"))
    }

    private func startClone(context: ZMQContext, security: BusSecurity, faults: FaultRules, history: SessionHistory, local: (broker: String?, clone: CloneEndpoints?)) throws -> CloneServerHandle {
        var cloneConfiguration = CloneServerConfiguration()
        cloneConfiguration.hugzInterval = configuration.hugzInterval
        cloneConfiguration.maxValueBytes = configuration.maxMessageBytes
        if history.isRecording { cloneConfiguration.sessionObserver = history.cloneObserver }
        cloneConfiguration.curveSecretKey = security.curve?.serverKeys.secretKey
        cloneConfiguration.zapDomain = security.zapDomain
        cloneConfiguration.access = security.access
        cloneConfiguration.plainIPC = security.access != nil
        cloneConfiguration.snapshotRate = configuration.snapshotRate
        cloneConfiguration.additionalEndpoints = [local.clone].compactMap { $0 }
        // Every value in a Flowbus tree is an envelope ending with its check: one damaged on the
        // way is not applied. Other keys are any 12/CHP peer's own, and unchecked.
        cloneConfiguration.checkedPrefixes = CloneKey.envelopeTrees
        // The map outlives the host: sessions (navigation, states, flows) carry on after a restart.
        cloneConfiguration.journalPath = configuration.runDirectory.path + "/data/clone.journal"
        return try CloneServer.start(
            context: context, configuration: cloneConfiguration,
            endpoints: try CloneEndpoints(base: configuration.resolvedCloneBase), faults: faults,
            logger: logger.with(component: "clone"))
    }

}

extension Logger {
    func with(component: String) -> Logger {
        var copy = self
        copy[metadataKey: "flowbus.component"] = "\(component)"
        return copy
    }
}
