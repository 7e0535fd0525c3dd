import Clone
import Foundation
import Logging
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

    public init(environment: PluginEnvironment, logger: Logger) throws(ZMQError) {
        self.environment = environment
        self.context = try ZMQContext()
        self.logger = logger
    }

    public func clientConfiguration(timeout: Duration = .seconds(2), tries: Int = 3) -> ClientConfiguration {
        var configuration = ClientConfiguration()
        configuration.timeout = timeout
        configuration.tries = tries
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
        return try CloneAgent(context: context, endpoints: environment.clone, configuration: configuration, logger: logger)
    }

    public func makeCaller(name: String, timeout: Duration = .seconds(2)) throws(MajordomoClientError) -> BusCaller {
        try BusCaller(context: context, endpoint: environment.broker, configuration: clientConfiguration(timeout: timeout), name: name, logger: logger)
    }

    /// A service transport for one thread (an MDP client is not thread-safe).
    public func makeServiceTransport(timeout: Duration = .seconds(2)) throws(MajordomoClientError) -> MajordomoServiceTransport {
        let client = try MajordomoClient(
            context: context, endpoint: environment.broker, configuration: clientConfiguration(timeout: timeout), logger: logger)
        return MajordomoServiceTransport(client: client, writer: environment.writer)
    }
}
