import Foundation

/// The `FLOWBUS_*` environment a host gives each plugin (Protocols/README.md §1), named and read
/// in one place: the host writes them, plugins (FlowKit) and clients (FlowClient) read them.
public struct BusVariables: Sendable, Equatable {
    public static let broker = "FLOWBUS_BROKER"
    public static let cloneSnapshot = "FLOWBUS_CLONE_SNAPSHOT"
    public static let clonePublisher = "FLOWBUS_CLONE_PUBLISHER"
    public static let cloneCollector = "FLOWBUS_CLONE_COLLECTOR"
    public static let plugin = "FLOWBUS_PLUGIN"
    public static let incarnation = "FLOWBUS_INCARNATION"
    public static let replica = "FLOWBUS_REPLICA"
    public static let heartbeatMilliseconds = "FLOWBUS_HEARTBEAT_MS"
    public static let runDirectory = "FLOWBUS_RUN_DIR"
    public static let serverKey = "FLOWBUS_SERVER_KEY"
    public static let clientPublicKey = "FLOWBUS_CLIENT_PUBLIC_KEY"
    public static let clientSecretKey = "FLOWBUS_CLIENT_SECRET_KEY"
    public static let logLevel = "FLOWBUS_LOG_LEVEL"
    /// The host's session-capability key (64 hex digits), given to plugins of a closed host.
    public static let sessionKey = "FLOWBUS_SESSION_KEY"

    /// The broker and the three Clone endpoints, or nil when any is missing.
    public var endpoints: (broker: String, snapshot: String, publisher: String, collector: String)?
    public var plugin: String?
    public var replica: Int
    public var incarnation: UInt64
    public var heartbeat: Duration
    public var runDirectory: String?
    /// CURVE: the host's public key and this process's key pair (z85), when the host runs with it.
    public var serverKey: String?
    public var clientPublicKey: String?
    public var clientSecretKey: String?
    /// The session-capability key, when the host runs closed.
    public var sessionKey: String?

    /// Reads the variables; unset or unreadable numbers take their defaults (replica 0,
    /// incarnation 1, heartbeat 500 ms).
    public init(_ environment: [String: String] = ProcessInfo.processInfo.environment) {
        func value(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        if let broker = value(Self.broker), let snapshot = value(Self.cloneSnapshot),
           let publisher = value(Self.clonePublisher), let collector = value(Self.cloneCollector) {
            endpoints = (broker, snapshot, publisher, collector)
        }
        plugin = value(Self.plugin)
        replica = value(Self.replica).flatMap(Int.init) ?? 0
        incarnation = value(Self.incarnation).flatMap(UInt64.init) ?? 1
        heartbeat = .milliseconds(value(Self.heartbeatMilliseconds).flatMap(Int.init) ?? 500)
        runDirectory = value(Self.runDirectory)
        serverKey = value(Self.serverKey)
        clientPublicKey = value(Self.clientPublicKey)
        clientSecretKey = value(Self.clientSecretKey)
        sessionKey = value(Self.sessionKey)
    }

    public static func == (left: BusVariables, right: BusVariables) -> Bool {
        left.endpoints?.broker == right.endpoints?.broker && left.endpoints?.snapshot == right.endpoints?.snapshot
            && left.endpoints?.publisher == right.endpoints?.publisher && left.endpoints?.collector == right.endpoints?.collector
            && left.plugin == right.plugin && left.replica == right.replica && left.incarnation == right.incarnation
            && left.heartbeat == right.heartbeat && left.runDirectory == right.runDirectory && left.serverKey == right.serverKey
            && left.clientPublicKey == right.clientPublicKey && left.clientSecretKey == right.clientSecretKey
            && left.sessionKey == right.sessionKey
    }
}
