import Clone
import FlowProtocol
import Foundation
import Logging
import MessagePath
import Majordomo
import Synchronization
import ZeroMQ

/// A plugin's way onto the bus: the endpoints the host gave it, one ZeroMQ context, and
/// factories for the sockets its runtimes need, CURVE included when the host uses it.
public final class PluginBus: Sendable {
    public let environment: PluginEnvironment
    public let context: ZMQContext
    public let logger: Logger
    private let workerCounter = Atomic<Int>(0)
    private let stopAnnouncements = Mutex(StopAnnouncements())

    private struct StopAnnouncements {
        var announced = false
        var stopped = false
        var wakes: [WakeSignal] = []
    }

    public init(environment: PluginEnvironment, logger: Logger) throws(ZMQError) {
        self.environment = environment
        self.context = try ZMQContext()
        self.logger = logger
    }

    /// Says that whoever decides when this process stops will call `announceStop()` (as
    /// `FlowPlugin.run` does on SIGTERM or SIGINT). The serving loops then sleep until a request,
    /// a heartbeat or the announcement, instead of waking every 100 ms to look at their stop
    /// condition: ten wake-ups a second per loop in an idle plugin.
    public func stopWillBeAnnounced() {
        stopAnnouncements.withLock { $0.announced = true }
    }

    /// Wakes every signal registered with `wakeOnStop`, now and for any registered later. Call
    /// it after making the loops' stop condition true.
    public func announceStop() {
        let wakes = stopAnnouncements.withLock { state in
            state.stopped = true
            return state.wakes
        }
        for wake in wakes { wake.wake() }
    }

    /// Registers `wake` to be woken by `announceStop()`. True when the stop will be announced
    /// (`stopWillBeAnnounced`): the caller's loop may then wait without a timeout for its stop
    /// check. False when nobody said so: it must keep looking at its stop condition itself.
    public func wakeOnStop(_ wake: WakeSignal) -> Bool {
        stopAnnouncements.withLock { state in
            guard state.announced else { return false }
            state.wakes.append(wake)
            if state.stopped { wake.wake() }
            return true
        }
    }

    public func clientConfiguration(timeout: Duration = .seconds(2), tries: Int = 3, timeoutCap: Duration? = nil) -> ClientConfiguration {
        var configuration = ClientConfiguration()
        configuration.timeout = timeout
        configuration.tries = tries
        configuration.timeoutCap = timeoutCap
        configuration.resendWhenAnswered = ErrorReply.damagedFrame
        configuration.retryWhenAnswered = ErrorReply.unsettledFrame
        if let curve = environment.curve {
            configuration.curveServerKey = curve.serverKey
            configuration.curveKeyPair = curve.keyPair
        }
        return configuration
    }

    /// A worker configuration whose routing id `<plugin>/<pid>/<n>` ties it to this process for `flowbus ps`.
    public func workerConfiguration() -> WorkerConfiguration {
        var configuration = WorkerConfiguration()
        configuration.heartbeatInterval = environment.heartbeat
        let number = workerCounter.add(1, ordering: .relaxed).newValue
        configuration.routingID = "\(environment.plugin)/\(getpid())/\(number * 1000)"
        if let curve = environment.curve {
            configuration.curveServerKey = curve.serverKey
            configuration.curveKeyPair = curve.keyPair
        }
        return configuration
    }

    public func makeAgent(subtrees: [String]) throws(CloneStartError) -> CloneAgent {
        var configuration = CloneAgentConfiguration(subtrees: subtrees)
        configuration.curve = environment.curve
        // The host's Clone server confirms writes; one lost on the way is sent again.
        configuration.confirmWrites = true
        // A confirmation takes milliseconds on one host; one that is late costs a deduplicated resend.
        configuration.confirmAfter = .milliseconds(200)
        // A replaced incarnation's late writes (held on the way, or sent by a process paused
        // through its own restart) cannot put its outdated values back.
        configuration.generation = (environment.writer, environment.incarnation)
        return try CloneAgent(context: context, endpoints: environment.clone, configuration: configuration, logger: logger)
    }

    public func makeCaller(name: String, timeout: Duration = .seconds(2), threads: Int = 4) throws(MajordomoClientError) -> BusCaller {
        try BusCaller(
            context: context, endpoint: environment.broker,
            configuration: clientConfiguration(timeout: timeout, timeoutCap: ServiceCallPolicy.timeoutCap), name: name, logger: logger,
            threads: threads)
    }

    /// A service transport that any thread may use: calls made at once each get an MDP client
    /// of their own (one socket each), made when first needed.
    /// Tries wait 2, 4 and 4 s: a lost call costs 2 s, and a service stalled or restarting for a
    /// few seconds is waited for (the service answers a retry as it answered the first try).
    public func makeServiceTransport(timeout: Duration = .seconds(2)) throws(MajordomoClientError) -> MajordomoServiceTransport {
        let configuration = clientConfiguration(timeout: timeout, tries: 3, timeoutCap: .seconds(4))
        let make = { [context, environment, logger] () throws(MajordomoClientError) -> MajordomoClient in
            try MajordomoClient(context: context, endpoint: environment.broker, configuration: configuration, logger: logger)
        }
        return MajordomoServiceTransport(client: try make(), writer: environment.writer, makeClient: make)
    }
}
