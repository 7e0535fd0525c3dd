import Foundation

/// One plugin process slot (a plugin's replica) as the supervisor sees it now.
public struct PluginStatus: Codable, Sendable, Equatable {
    public enum State: String, Codable, Sendable {
        case starting, running, backingOff, stopping, stopped, exited, failed
    }

    public var name: String
    public var replica: Int
    public var pid: Int32?
    public var state: State
    public var restarts: Int
    public var lastExitReason: String?
    public var startedAt: Date?
    /// Seconds the current process has been running; zero when none is.
    public var uptime: Double
    public var lastHeartbeat: Date?
    /// Processes of this slot killed because they stayed alive but silent on the bus past their liveness.
    public var hangs: Int
    /// 1 for the first process of this slot, one more for each restart.
    public var incarnation: Int
    public var logPath: String
    /// The one CPU the slot's processes run on (`flowbus up --placement pinned`); nil: the kernel places them.
    public var cpu: Int?
}

/// A plugin's replica: `echo[1]`.
public struct InstanceID: Hashable, Sendable, CustomStringConvertible {
    public var plugin: String
    public var replica: Int

    public init(plugin: String, replica: Int) {
        self.plugin = plugin
        self.replica = replica
    }

    public var description: String { "\(plugin)[\(replica)]" }
}
