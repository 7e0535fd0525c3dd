import Foundation

/// What the host asks of one plugin instance's process itself, beside the faults it injects in its
/// own message paths: a skewed clock, and a cut of everything the process receives from the host
/// (the host-to-plugin side of a partition). The host writes it to `path(for:replica:)` and sends
/// SIGUSR2; the plugin (`FlowPlugin`) reads it then, and when it starts, so a restarted instance
/// takes over what its predecessor was told. Times are wall-clock, since they outlive a process.
public struct ProcessFaultOrder: Codable, Sendable, Equatable {
    /// The signal that tells a plugin to read its order again.
    public static let signal: Int32 = SIGUSR2

    public struct Clock: Codable, Sendable, Equatable {
        public var offsetMilliseconds: Int64
        public var rate: Double
        /// When the skew was set (Unix milliseconds): its drift runs from then.
        public var setAtUnixMilliseconds: Int64

        public init(offsetMilliseconds: Int64, rate: Double, setAtUnixMilliseconds: Int64) {
            self.offsetMilliseconds = offsetMilliseconds
            self.rate = rate
            self.setAtUnixMilliseconds = setAtUnixMilliseconds
        }
    }

    /// Counts the orders the host wrote for the instance; the plugin writes it back to
    /// `acknowledgementPath` once it has taken the order in.
    public var serial: UInt64 = 0
    /// Nil: the true clock.
    public var clock: Clock?
    /// Until when (Unix milliseconds) what the process receives from the host is lost; nil: never.
    public var cutUntilUnixMilliseconds: Int64?

    public init(serial: UInt64 = 0, clock: Clock? = nil, cutUntilUnixMilliseconds: Int64? = nil) {
        self.serial = serial
        self.clock = clock
        self.cutUntilUnixMilliseconds = cutUntilUnixMilliseconds
    }

    public var isEmpty: Bool { clock == nil && cutUntilUnixMilliseconds == nil }

    /// Where the plugin says which order (`serial`) it has taken in.
    public static func acknowledgementPath(_ path: String) -> String { path + ".taken" }

    /// The serial of the last order the plugin took in (0: none).
    public static func acknowledged(_ path: String) -> UInt64 {
        FileManager.default.contents(atPath: acknowledgementPath(path)).flatMap { UInt64(String(decoding: $0, as: UTF8.self)) } ?? 0
    }

    /// Says the order `serial` was taken in.
    public static func acknowledge(_ path: String, serial: UInt64) throws {
        try Data("\(serial)".utf8).write(to: URL(fileURLWithPath: acknowledgementPath(path)), options: .atomic)
    }

    /// `<run>/faults/<plugin>.<replica>.json`.
    public static func path(in runDirectory: String, plugin: String, replica: Int) -> String {
        "\(runDirectory)/faults/\(plugin).\(replica).json"
    }

    /// The order at `path`; an empty one when there is none.
    public static func read(_ path: String) throws -> ProcessFaultOrder {
        guard let data = FileManager.default.contents(atPath: path) else { return ProcessFaultOrder() }
        return try JSONDecoder().decode(ProcessFaultOrder.self, from: data)
    }

    /// Writes the order at `path` atomically (a plugin never reads half of one).
    public func write(_ path: String) throws {
        let folder = (path as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try encoder.encode(self).write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    public static func nowUnixMilliseconds() -> Int64 {
        Int64((Date().timeIntervalSince1970 * 1000).rounded())
    }
}
