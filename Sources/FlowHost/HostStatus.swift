import Clone
import Foundation
import Majordomo
import MessagePath
import Supervision

/// What `flowbus ps --json` prints: the host, its plugins, and the bus's counters.
public struct HostStatus: Codable, Sendable {
    public var host: HostDescriptor
    public var uptimeSeconds: Double
    public var plugins: [PluginStatus]
    public var broker: BrokerStatistics
    public var workers: [WorkerInfo]
    public var clone: CloneServerStatistics
    public var faults: [FaultRuleStatus]
    /// Handshakes refused by the CURVE allow-list, when CURVE is on.
    public var curveDenied: Int?
    /// The host's resident size and the freed heap returned to the system (`MemoryTrimmer`).
    public var memory: MemoryStatistics?
    /// Closed mode: client connections refused for coming faster than the connection rate.
    public var connectionsRateLimited: Int?
    /// The CPU the host's threads are pinned to (`flowbus up --placement pinned`, or `auto` on a
    /// host that may use two CPUs); nil: shared.
    public var hostCPU: Int?
    /// The placement the host was started with: auto, shared or pinned (`hostCPU` says what auto chose).
    public var placement: String?
}
