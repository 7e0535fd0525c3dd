import Clone
import Foundation
import Majordomo
import ZeroMQ

/// What the host hands a plugin in its environment (Protocols/README.md, "Endpoints").
struct PluginSettings {
    var broker: String
    var clone: CloneEndpoints
    var plugin: String
    var replica: Int
    var incarnation: UInt64
    var heartbeat: Duration
    /// MDP worker lanes (`--lanes N` in the manifest's args): requests this process holds at once.
    var lanes: Int
    /// Requests each lane takes at once (`--credit N`): Flowbus's READY extension, 1 = plain 7/MDP.
    var credit: Int
    var curve: (serverKey: CurveKey, keyPair: CurveKeyPair)?

    static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) throws -> PluginSettings {
        func required(_ name: String) throws -> String {
            guard let value = environment[name], !value.isEmpty else {
                throw PluginSettingsError(
                    "\(name) is not set: flowbus-echo is a plugin, started by the host; run it through `flowbus up` (or set the FLOWBUS_* variables Protocols/README.md lists)")
            }
            return value
        }
        var settings = PluginSettings(
            broker: try required("FLOWBUS_BROKER"),
            clone: CloneEndpoints(
                snapshot: try required("FLOWBUS_CLONE_SNAPSHOT"),
                publisher: try required("FLOWBUS_CLONE_PUBLISHER"),
                collector: try required("FLOWBUS_CLONE_COLLECTOR")),
            plugin: environment["FLOWBUS_PLUGIN"] ?? "echo",
            replica: Int(environment["FLOWBUS_REPLICA"] ?? "") ?? 0,
            incarnation: UInt64(environment["FLOWBUS_INCARNATION"] ?? "") ?? 1,
            heartbeat: .milliseconds(Int(environment["FLOWBUS_HEARTBEAT_MS"] ?? "") ?? 500),
            lanes: 1,
            credit: 1,
            curve: nil)
        let arguments = CommandLine.arguments
        /// The number after `flag` in the manifest's args, if the flag is there; it must lie in `range`.
        func number(_ flag: String, in range: ClosedRange<Int>, meaning: String, example: Int) throws -> Int? {
            guard let index = arguments.firstIndex(of: flag) else { return nil }
            guard index + 1 < arguments.count, let value = Int(arguments[index + 1]), range.contains(value) else {
                throw PluginSettingsError("\(flag) takes a number from \(range.lowerBound) to \(range.upperBound) (\(meaning)), as in `args: [\"\(flag)\", \"\(example)\"]`")
            }
            return value
        }
        settings.lanes = try number("--lanes", in: 1...256, meaning: "requests served at once", example: 4) ?? settings.lanes
        settings.credit = try number("--credit", in: 1...MDP.maxCredit, meaning: "requests each worker takes at once", example: 16) ?? settings.credit
        if let server = environment["FLOWBUS_SERVER_KEY"] {
            let pair = CurveKeyPair(
                publicKey: try CurveKey(z85: try required("FLOWBUS_CLIENT_PUBLIC_KEY")),
                secretKey: try CurveKey(z85: try required("FLOWBUS_CLIENT_SECRET_KEY")))
            settings.curve = (try CurveKey(z85: server), pair)
        }
        return settings
    }
}

struct PluginSettingsError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
