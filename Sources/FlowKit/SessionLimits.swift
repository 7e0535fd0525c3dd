import MessagePath

/// How many sessions the navigation owner keeps open: in all (`--max-sessions`, 10,000) and per
/// client (`--max-sessions-per-client`, 1,000), so no one client can fill the host. A client is
/// the requester a closed broker names (`client:<address>`, or `client:<key>` under CURVE);
/// plugins and the user's own tools are not counted per client.
public struct SessionLimits: Sendable, Equatable {
    public var open: Int
    public var perClient: Int

    public static let defaultOpen = 10_000
    public static let defaultPerClient = 1_000

    public init(open: Int = defaultOpen, perClient: Int = defaultPerClient) {
        self.open = open
        self.perClient = perClient
    }

    /// From the owner's plugin arguments `--max-sessions N` and `--max-sessions-per-client N`.
    init(options: [String: String]) throws(PluginEnvironmentError) {
        self.init(open: try Self.count(options, "max-sessions", default: Self.defaultOpen),
                  perClient: try Self.count(options, "max-sessions-per-client", default: Self.defaultPerClient))
    }

    private static func count(_ options: [String: String], _ name: String, default value: Int) throws(PluginEnvironmentError) -> Int {
        guard let text = options[name] else { return value }
        guard let count = Int(text), count > 0 else {
            throw PluginEnvironmentError(
                "--\(name) takes a positive number of open sessions, as in `args: [\"--\(name)\", \"5000\"]`; got \"\(text)\"")
        }
        return count
    }

    /// The client a limit per client counts `peer` against: nil for plugins, the host and operators.
    static func client(_ peer: String?) -> String? {
        guard let peer, PeerClass(userID: peer) == .client else { return nil }
        return peer
    }
}
