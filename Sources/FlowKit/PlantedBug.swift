/// Bugs a plugin can be started with on purpose (`--planted-bug NAME` in its manifest args), so
/// that the chaos checker can be shown to catch them. Never for real use: each breaks a promise
/// Flowbus makes, and the plugin says so loudly when it starts.
public enum PlantedBug: String, Sendable, CaseIterable {
    /// A view model applies every request it receives as new: it skips the idempotency key and
    /// the screen-version check, so a duplicated or retried intent is applied twice.
    case skipIdempotency = "skip-idempotency"
    /// A coordinator accepts calls from any incarnation of a process, also one a restart replaced.
    case ignoreFencing = "ignore-fencing"

    /// The bug the plugin's arguments plant, if any.
    static func planted(in options: [String: String]) throws(PluginEnvironmentError) -> PlantedBug? {
        guard let name = options["planted-bug"] else { return nil }
        guard let bug = PlantedBug(rawValue: name) else {
            throw PluginEnvironmentError(
                "--planted-bug is one of \(allCases.map(\.rawValue).joined(separator: ", ")) (bugs planted to test the chaos checker); got \"\(name)\"")
        }
        return bug
    }
}
