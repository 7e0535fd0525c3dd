import Foundation
import Clone
import Majordomo
import MessagePath
import Supervision

/// Everything `flowbus up` decides before the host starts.
public struct HostConfiguration: Sendable {
    public var runDirectory: RunDirectory
    /// The broker's ROUTER endpoint; nil means `ipc://<run-dir>/broker.ipc`.
    public var brokerEndpoint: String?
    /// The Clone server's base endpoint (`tcp://HOST:P` or `ipc://PATH`); nil means `ipc://<run-dir>/clone`.
    public var cloneBase: String?
    /// The manifest's YAML text and the folder relative commands resolve against (`flowbus up`
    /// reads it from --manifest, or from the app registry's manifest of --app or the default app).
    public var manifestYAML: String
    public var manifestDirectory: URL
    /// Where plugin commands without a slash are looked for before PATH.
    public var pluginSearchPath: [String]
    /// The host's CURVE secret key file and the allow-list of client public keys.
    public var curveSecretPath: String?
    public var allowListPath: String?
    public var heartbeatInterval: Duration
    public var heartbeatLiveness: Int
    public var maxMessageBytes: Int
    public var unknownServiceExpiry: Duration
    public var hugzInterval: Duration
    /// How long the broker polls without sleeping after traffic (`BrokerConfiguration.busyPoll`).
    public var brokerBusyPoll: Duration = BrokerConfiguration().busyPoll
    /// The spin time the broker accepts per message caught, in sleeps' CPU (`BrokerConfiguration.busyPollBudget`).
    public var brokerBusyPollBudget: Double = BrokerConfiguration().busyPollBudget
    /// What the host keeps for `flowbus trace`. `sessions == 0` keeps nothing: the broker and the
    /// Clone server then carry no observer at all.
    public var historyLimits = SessionHistoryLimits()
    /// Open mode (`flowbus up --open`): every peer may register as a worker, call any service and
    /// read or write any key, as on a plain 7/MDP broker and 12/CHP server. For the zguide's
    /// reference peers on loopback; the default is closed (Protocols/README.md, "Who may do what").
    public var openAccess = false
    /// Where the host's threads and the plugin processes run (`flowbus up --placement`, whose
    /// default is `auto`). Shared here: a host run inside another program does not pin that
    /// program's threads unless asked.
    public var placement = Placement.shared
    /// Closed mode: new connections per second one client address may open (a burst of ten
    /// times that at once); past it the ZAP handler refuses them and counts them, and the
    /// client's libzmq connects again by itself. Plugins and the user's own tools (ipc) are not limited.
    public var connectionRate = RateLimit(perSecond: 100, burst: 1000)
    /// Closed mode: snapshots per second one client may ask for (`CloneServerConfiguration.snapshotRate`).
    public var snapshotRate = CloneServerConfiguration().snapshotRate

    public init(
        runDirectory: RunDirectory,
        brokerEndpoint: String? = nil,
        cloneBase: String? = nil,
        manifestYAML: String = "",
        manifestDirectory: URL = URL(fileURLWithPath: FileManager.default.currentDirectoryPath),
        pluginSearchPath: [String] = [],
        curveSecretPath: String? = nil,
        allowListPath: String? = nil,
        heartbeatInterval: Duration = .milliseconds(500),
        heartbeatLiveness: Int = 3,
        maxMessageBytes: Int = 1 << 20,
        unknownServiceExpiry: Duration = .seconds(5),
        hugzInterval: Duration = .seconds(1)
    ) {
        self.runDirectory = runDirectory
        self.brokerEndpoint = brokerEndpoint
        self.cloneBase = cloneBase
        self.manifestYAML = manifestYAML
        self.manifestDirectory = manifestDirectory
        self.pluginSearchPath = pluginSearchPath
        self.curveSecretPath = curveSecretPath
        self.allowListPath = allowListPath
        self.heartbeatInterval = heartbeatInterval
        self.heartbeatLiveness = heartbeatLiveness
        self.maxMessageBytes = maxMessageBytes
        self.unknownServiceExpiry = unknownServiceExpiry
        self.hugzInterval = hugzInterval
    }

    public var resolvedBrokerEndpoint: String { brokerEndpoint ?? runDirectory.defaultBrokerEndpoint }
    public var resolvedCloneBase: String { cloneBase ?? runDirectory.defaultCloneBase }

    /// Refuses to expose the bus beyond this machine without CURVE and an allow-list.
    public func validateExposure() throws {
        for endpoint in [resolvedBrokerEndpoint, resolvedCloneBase] {
            if case .network = EndpointExposure(endpoint: endpoint), curveSecretPath == nil || allowListPath == nil {
                throw HostError.curveRequired(endpoint: endpoint)
            }
        }
    }
}
