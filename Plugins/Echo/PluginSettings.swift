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
        if let flag = arguments.firstIndex(of: "--lanes") {
            guard flag + 1 < arguments.count, let lanes = Int(arguments[flag + 1]), (1...256).contains(lanes) else {
                throw PluginSettingsError("--lanes takes a number from 1 to 256 (requests served at once), as in `args: [\"--lanes\", \"4\"]`")
            }
            settings.lanes = lanes
        }
        if let flag = arguments.firstIndex(of: "--credit") {
            guard flag + 1 < arguments.count, let credit = Int(arguments[flag + 1]), (1...MDP.maxCredit).contains(credit) else {
                throw PluginSettingsError("--credit takes a number from 1 to \(MDP.maxCredit) (requests each worker takes at once), as in `args: [\"--credit\", \"16\"]`")
            }
            settings.credit = credit
        }
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
