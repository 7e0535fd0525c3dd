import Clone
import Dispatch
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

    public init(configuration: HostConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
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

        let context = try ZMQContext()
        let security = try BusSecurity.start(configuration: configuration, context: context, logger: logger)
        let faults = FaultRules()
        let history = SessionHistory(limits: configuration.historyLimits)
        let broker = try startBroker(context: context, security: security, faults: faults, history: history)
        defer { broker.stop() }
        let clone = try startClone(context: context, security: security, faults: faults, history: history)
        defer { clone.stop() }

        let endpoints = HostEndpoints(
            broker: broker.endpoints.first ?? configuration.resolvedBrokerEndpoint,
            cloneSnapshot: clone.endpoints.snapshot,
            clonePublisher: clone.endpoints.publisher,
            cloneCollector: clone.endpoints.collector,
            control: directory.controlEndpoint
        )
        let descriptor = HostDescriptor(
            pid: getpid(), startedAt: Date(), runDirectory: directory.path,
            endpoints: endpoints, serverPublicKey: security?.serverKeys.publicKey.z85)

        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("FLOWBUS_") }
        environment.merge(endpoints.environment) { $1 }
        environment[BusVariables.runDirectory] = directory.path
        environment[BusVariables.heartbeatMilliseconds] = "\(configuration.heartbeatInterval.components.seconds * 1000 + configuration.heartbeatInterval.components.attoseconds / 1_000_000_000_000_000)"
        if let security { environment.merge(security.pluginEnvironment) { $1 } }
        let supervisor = Supervisor(
            manifest: manifest, environment: environment,
            commandSearchPath: configuration.pluginSearchPath,
            logDirectory: URL(fileURLWithPath: directory.logDirectory), logger: logger)

        let control = try ControlServer.start(context: context, endpoint: directory.controlEndpoint, logger: logger) {
            [self] request in
            ControlHandler(
                host: self, descriptor: descriptor, supervisor: supervisor, broker: broker, clone: clone,
                faults: faults, security: security, history: history
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
        heartbeats.stop()
        supervisor.stop()
        security?.authenticator.stop()
        logger.info("flowbus host stopped")
    }

    private func startBroker(context: ZMQContext, security: BusSecurity?, faults: FaultRules, history: SessionHistory) throws -> BrokerHandle {
        var brokerConfiguration = BrokerConfiguration()
        brokerConfiguration.heartbeatInterval = configuration.heartbeatInterval
        brokerConfiguration.heartbeatLiveness = configuration.heartbeatLiveness
        brokerConfiguration.maxMessageBytes = configuration.maxMessageBytes
        brokerConfiguration.requestExpiry = configuration.unknownServiceExpiry
        brokerConfiguration.busyPoll = configuration.brokerBusyPoll
        brokerConfiguration.rejectionReply = { rejection in ErrorReplies.body(for: rejection) }
        if history.isRecording { brokerConfiguration.observer = history.brokerObserver }
        if let security {
            brokerConfiguration.curveSecretKey = security.serverKeys.secretKey
            brokerConfiguration.zapDomain = BusSecurity.zapDomain
        }
        return try MajordomoBroker.start(
            context: context, configuration: brokerConfiguration,
            endpoints: [configuration.resolvedBrokerEndpoint], faults: faults,
            logger: logger.with(component: "broker"))
    }

    private func startClone(context: ZMQContext, security: BusSecurity?, faults: FaultRules, history: SessionHistory) throws -> CloneServerHandle {
        var cloneConfiguration = CloneServerConfiguration()
        cloneConfiguration.hugzInterval = configuration.hugzInterval
        cloneConfiguration.maxValueBytes = configuration.maxMessageBytes
        if history.isRecording { cloneConfiguration.sessionObserver = history.cloneObserver }
        if let security {
            cloneConfiguration.curveSecretKey = security.serverKeys.secretKey
            cloneConfiguration.zapDomain = BusSecurity.zapDomain
        }
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
