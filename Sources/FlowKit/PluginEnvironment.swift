import Clone
import FlowbusEnvironment
import Foundation
import MessagePath
import ZeroMQ

/// What the host hands a plugin in its environment (Protocols/README.md, "Endpoints").
public struct PluginEnvironment: Sendable {
    public var broker: String
    public var clone: CloneEndpoints
    /// The plugin's name in the manifest; with the replica, the writer name of its envelopes.
    public var plugin: String
    public var replica: Int
    public var incarnation: UInt64
    public var heartbeat: Duration
    /// MDP worker lanes (`--lanes N` in the manifest's args): requests one process holds at once.
    public var lanes: Int
    public var curve: (serverKey: CurveKey, keyPair: CurveKeyPair)?
    /// The host's session-capability key (a closed host's FLOWBUS_SESSION_KEY): the runtimes check
    /// every request's `Envelope.capability` with it and sign their own calls. Nil: no checks.
    public var capabilities: CapabilityKey?
    /// The host's run directory (FLOWBUS_RUN_DIR): where a plugin keeps what must outlive it.
    public var runDirectory: String?
    /// Options after the FLOWBUS ones: `--name value` pairs from the manifest's args.
    public var options: [String: String]

    /// `<plugin>/<replica>`: Envelope.writer of everything this process writes.
    public var writer: String { "\(plugin)/\(replica)" }

    public init(
        broker: String, clone: CloneEndpoints, plugin: String, replica: Int = 0, incarnation: UInt64 = 1,
        heartbeat: Duration = .milliseconds(500), lanes: Int = 1,
        curve: (serverKey: CurveKey, keyPair: CurveKeyPair)? = nil, capabilities: CapabilityKey? = nil, options: [String: String] = [:]
    ) {
        self.broker = broker
        self.clone = clone
        self.plugin = plugin
        self.replica = replica
        self.incarnation = incarnation
        self.heartbeat = heartbeat
        self.lanes = lanes
        self.curve = curve
        self.capabilities = capabilities
        self.options = options
    }

    /// Reads the FLOWBUS_* variables and `--name value` arguments; `executable` names the
    /// program in error messages.
    public static func fromProcess(
        executable: String,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        arguments: [String] = Array(CommandLine.arguments.dropFirst())
    ) throws(PluginEnvironmentError) -> PluginEnvironment {
        let variables = BusVariables(environment)
        func required(_ value: String?, _ name: String) throws(PluginEnvironmentError) -> String {
            guard let value else {
                throw PluginEnvironmentError(
                    "\(name) is not set: \(executable) is a plugin, started by the host; run it through `flowbus up` (or set the FLOWBUS_* variables Protocols/README.md lists)")
            }
            return value
        }
        var options: [String: String] = [:]
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            guard argument.hasPrefix("--"), argument.count > 2 else {
                throw PluginEnvironmentError("\(executable): unexpected argument \"\(argument)\"; plugin options are `--name value` pairs")
            }
            guard index + 1 < arguments.count else {
                throw PluginEnvironmentError("\(executable): option \(argument) needs a value, as in `\(argument) 1`")
            }
            options[String(argument.dropFirst(2))] = arguments[index + 1]
            index += 2
        }
        var lanes = 1
        if let text = options["lanes"] {
            guard let value = Int(text), (1...256).contains(value) else {
                throw PluginEnvironmentError("--lanes takes a number from 1 to 256 (requests served at once), as in `args: [\"--lanes\", \"4\"]`")
            }
            lanes = value
        }
        let endpoints = variables.endpoints
        var settings = PluginEnvironment(
            broker: try required(endpoints?.broker ?? environment[BusVariables.broker], BusVariables.broker),
            clone: CloneEndpoints(
                snapshot: try required(endpoints?.snapshot ?? environment[BusVariables.cloneSnapshot], BusVariables.cloneSnapshot),
                publisher: try required(endpoints?.publisher ?? environment[BusVariables.clonePublisher], BusVariables.clonePublisher),
                collector: try required(endpoints?.collector ?? environment[BusVariables.cloneCollector], BusVariables.cloneCollector)),
            plugin: variables.plugin ?? executable,
            replica: variables.replica,
            incarnation: variables.incarnation,
            heartbeat: variables.heartbeat,
            lanes: lanes,
            options: options)
        settings.runDirectory = variables.runDirectory
        if let text = variables.sessionKey {
            guard let key = CapabilityKey(hex: text) else {
                throw PluginEnvironmentError("\(BusVariables.sessionKey) is not 64 hex digits; it is the host's, passed to its plugins: run \(executable) through `flowbus up`")
            }
            settings.capabilities = key
        }
        if let server = variables.serverKey {
            do {
                let pair = CurveKeyPair(
                    publicKey: try CurveKey(z85: try required(variables.clientPublicKey, BusVariables.clientPublicKey)),
                    secretKey: try CurveKey(z85: try required(variables.clientSecretKey, BusVariables.clientSecretKey)))
                settings.curve = (try CurveKey(z85: server), pair)
            } catch let error as PluginEnvironmentError {
                throw error
            } catch {
                throw PluginEnvironmentError("the CURVE keys in FLOWBUS_SERVER_KEY / FLOWBUS_CLIENT_*_KEY are not valid z85 keys (\(error)); make new ones with `flowbus keys`")
            }
        }
        return settings
    }
}

public struct PluginEnvironmentError: Error, CustomStringConvertible, Equatable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
