import Foundation

/// What the host runs: the supervisor's limits and the plugin processes, in start order.
public struct Manifest: Sendable, Equatable {
    public var supervisor: SupervisorSettings
    public var plugins: [PluginSpec]
    /// What the manifest says about the app it runs, for people (`flowbus demo` prints it).
    public var app: AppInfo?
    /// The folder a command with a slash, but not absolute, is relative to.
    public var baseDirectory: URL

    public init(supervisor: SupervisorSettings = SupervisorSettings(), plugins: [PluginSpec], app: AppInfo? = nil, baseDirectory: URL) {
        self.supervisor = supervisor
        self.plugins = plugins
        self.app = app
        self.baseDirectory = baseDirectory
    }
}

/// The manifest's optional `app:` section: the app's name and title, and notes for a newcomer
/// (a demo account, where to look next).
public struct AppInfo: Sendable, Equatable, Codable {
    public var name: String
    public var title: String
    public var notes: String

    public init(name: String, title: String = "", notes: String = "") {
        self.name = name
        self.title = title
        self.notes = notes
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.strictContainer(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        title = try container.decodeIfPresent(String.self, forKey: .title) ?? ""
        notes = try container.decodeIfPresent(String.self, forKey: .notes) ?? ""
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case name, title, notes
    }
}

/// Restart intensity, backoff and shutdown limits shared by every plugin.
public struct SupervisorSettings: Sendable, Equatable {
    /// At most `intensity` restarts of one instance within `period`; one more and the host gives up on it.
    public var intensity: Int
    public var period: Duration
    public var backoff: Backoff
    /// How long a plugin has to exit after SIGTERM before it gets SIGKILL.
    public var shutdownTimeout: Duration
    /// A plugin whose bus workers the broker has heard from, then not for this long while its
    /// process is still alive (stopped, deadlocked, or a handler busy past its limit), is killed
    /// (SIGKILL) so that its restart policy brings a working one back. Zero: never.
    public var liveness: Duration
    /// Each log file of the run (`logs/*.log`, the host's too) is kept under this many bytes: past
    /// it, it is copied to `.log.1` and started again. Zero: never.
    public var logLimit: Int

    public init(
        intensity: Int = 5,
        period: Duration = .seconds(10),
        backoff: Backoff = Backoff(),
        shutdownTimeout: Duration = .seconds(5),
        liveness: Duration = .seconds(10),
        logLimit: Int = 16 << 20
    ) {
        self.logLimit = logLimit
        self.intensity = intensity
        self.period = period
        self.backoff = backoff
        self.shutdownTimeout = shutdownTimeout
        self.liveness = liveness
    }
}

/// Delays between consecutive restarts of one instance: doubling from `initial` up to `max`.
public struct Backoff: Sendable, Equatable {
    public var initial: Duration
    public var max: Duration

    public init(initial: Duration = .milliseconds(100), max: Duration = .seconds(5)) {
        self.initial = initial
        self.max = max
    }
}

/// One plugin: the command to run and how many identical processes of it.
public struct PluginSpec: Sendable, Equatable {
    public var name: String
    /// Absolute; relative to the manifest's folder when it has a slash; otherwise searched for.
    public var command: String
    public var args: [String]
    public var env: [String: String]
    public var restart: RestartPolicy
    public var replicas: Int
    /// Overrides the supervisor's shutdown timeout for this plugin.
    public var shutdownTimeout: Duration?
    /// Overrides the supervisor's liveness for this plugin.
    public var liveness: Duration?

    public init(
        name: String,
        command: String,
        args: [String] = [],
        env: [String: String] = [:],
        restart: RestartPolicy = .permanent,
        replicas: Int = 1,
        shutdownTimeout: Duration? = nil,
        liveness: Duration? = nil
    ) {
        self.liveness = liveness
        self.name = name
        self.command = command
        self.args = args
        self.env = env
        self.restart = restart
        self.replicas = replicas
        self.shutdownTimeout = shutdownTimeout
    }
}
