import Dispatch
import Foundation
import Logging
import MessagePath
import Synchronization
import ZeroMQ

/// The 7/MDP broker: one ROUTER endpoint for clients and workers, on a thread of its own.
public enum MajordomoBroker {
    /// Binds `endpoints` on a new thread and serves until `BrokerHandle.stop()` or until the context is shut down.
    /// Bind errors are thrown from here, saying what to do about them.
    public static func start(
        context: ZMQContext,
        configuration: BrokerConfiguration = BrokerConfiguration(),
        endpoints: [String],
        faults: FaultRules = FaultRules(),
        logger: Logger
    ) throws(BrokerStartError) -> BrokerHandle {
        try validate(configuration, endpoints: endpoints)
        let wake: WakeSignal
        do { wake = try WakeSignal() } catch { throw .system(error.description) }
        let shared = BrokerShared(wake: wake)
        let outcome = Mutex<Result<[String], BrokerStartError>?>(nil)
        let ready = DispatchSemaphore(value: 0)
        let thread = Thread {
            ThreadName.set("fb-broker")
            defer {
                shared.running.store(false, ordering: .releasing)
                shared.exited.signal()
            }
            let bound: [String]
            do throws(BrokerStartError) {
                let opened = try openSocket(context: context, configuration: configuration, endpoints: endpoints)
                bound = opened.bound
                outcome.withLock { $0 = .success(opened.bound) }
                ready.signal()
                BrokerLoop(socket: opened.socket, configuration: configuration, faults: faults, logger: logger, shared: shared).run()
                for endpoint in bound { try? opened.socket.unbind(endpoint) }
            } catch {
                outcome.withLock { $0 = .failure(error) }
                ready.signal()
                return
            }
            // libzmq closes listeners on its I/O thread; wait until ipc paths are free, so a
            // broker started right after `stop()` returns can bind them.
            let deadline = ContinuousClock.now + .seconds(1)
            while bound.contains(where: IPCEndpoint.hasListener), ContinuousClock.now < deadline {
                usleep(1000)
            }
        }
        thread.name = "flowbus-broker"
        thread.start()
        ready.wait()
        switch outcome.withLock({ $0 }) {
        case .success(let bound):
            logger.info("broker listening", metadata: ["flowbus.endpoints": "\(bound.joined(separator: " "))"])
            return BrokerHandle(endpoints: bound, shared: shared)
        case .failure(let error):
            shared.exited.wait()
            throw error
        case nil:
            throw .system("the broker thread ended before binding; this is a bug in Flowbus")
        }
    }

    private static func validate(_ configuration: BrokerConfiguration, endpoints: [String]) throws(BrokerStartError) {
        guard !endpoints.isEmpty else {
            throw .invalidConfiguration("no endpoint to bind; give at least one, e.g. ipc:///tmp/flowbus/broker.ipc")
        }
        guard configuration.heartbeatInterval > .zero, configuration.heartbeatLiveness >= 1 else {
            throw .invalidConfiguration("heartbeat interval must be positive and liveness at least 1 (defaults: 500 ms, 3)")
        }
        guard configuration.statisticsInterval > .zero, configuration.requestExpiry >= .zero else {
            throw .invalidConfiguration("statistics interval must be positive and request expiry not negative")
        }
        guard configuration.maxMessageBytes > 0, configuration.maxFramesPerMessage >= 6 else {
            throw .invalidConfiguration("maxMessageBytes must be positive and maxFramesPerMessage at least 6 (a worker REPLY has 6)")
        }
    }

    /// Runs on the broker thread: the socket is created, configured and bound where it will live.
    private static func openSocket(
        context: ZMQContext, configuration: BrokerConfiguration, endpoints: [String]
    ) throws(BrokerStartError) -> (socket: ZMQSocket, bound: [String]) {
        let socket: ZMQSocket
        do {
            socket = try ZMQSocket(context: context, type: .router, linger: .milliseconds(200))
            try socket.setRouterMandatory(true)
            // Open mode lets a reconnecting peer take over its routing id. Closed mode does not:
            // a client could otherwise claim a worker's id and receive the requests meant for it.
            try socket.setRouterHandover(configuration.access == nil)
            try socket.setSendHighWaterMark(configuration.highWaterMark)
            try socket.setReceiveHighWaterMark(configuration.highWaterMark)
            try socket.setMaximumMessageSize(configuration.transportMaxMessageBytes)
            if let key = configuration.curveSecretKey { try socket.makeCurveServer(secretKey: key) }
            if let domain = configuration.zapDomain { try socket.setZAPDomain(domain) }
        } catch {
            throw .socketSetup(error)
        }
        var bound: [String] = []
        for endpoint in endpoints {
            if IPCEndpoint.hasListener(endpoint) { throw .addressInUse(endpoint: endpoint) }
            do {
                if configuration.curveSecretKey != nil, configuration.plainIPC { try socket.setCurveServer(forBinding: endpoint) }
                try socket.bind(endpoint)
                bound.append((try? socket.lastEndpoint()) ?? endpoint)
            } catch {
                if error.code == .addressInUse { throw .addressInUse(endpoint: endpoint) }
                throw .bindFailed(endpoint: endpoint, error)
            }
        }
        return (socket: socket, bound: bound)
    }
}
