/// Who a peer of the bus is, as the host's ZAP handler established when it connected.
///
/// The handler gives every admitted connection a User-Id; libzmq attaches it to each message the
/// connection sends, so the broker and the Clone server can tell, per message, who sent it.
public enum PeerClass: String, Sendable, Equatable, CaseIterable {
    /// The host process itself (its own broker and Clone clients).
    case host
    /// A plugin the host launched and supervises (an ipc peer whose pid is its child), or a peer
    /// holding the plugins' CURVE key.
    case plugin
    /// Another process of the host's own user on an ipc endpoint in the run directory, which only
    /// that user can reach: `flowbus ps`, `sessions`, `call`, a local terminal client.
    case `operator`
    /// Anyone else: a tcp peer (with an allow-listed CURVE key where CURVE is on).
    case client

    /// May register as a worker and write Clone keys.
    public var mayServe: Bool { self == .host || self == .plugin }
    /// May call any service and read any key.
    public var mayReadAll: Bool { self != .client }

    /// The User-Id the ZAP handler gives a connection of this class, with a detail for the logs
    /// (the plugin's name, the operator's pid, the client's address).
    public func userID(_ detail: String = "") -> String {
        detail.isEmpty ? rawValue : rawValue + ":" + detail
    }

    /// The class a User-Id names. A message without one, or with one no host gave, is a client's:
    /// the rules fail closed.
    public init(userID: String?) {
        guard let userID else { self = .client; return }
        // The class is what comes before the first colon (no array of parts: this runs for every
        // message a closed host's broker and Clone server take).
        let name = userID.firstIndex(of: ":").map { userID[..<$0] } ?? userID[...]
        self = PeerClass(rawValue: String(name)) ?? .client
    }
}

/// What each class of peer may do on the bus (`Protocols/README.md`, "Who may do what"). A
/// broker or Clone server without one (open mode) lets every peer do everything.
public struct BusAccess: Sendable, Equatable {
    /// Services a client may call, by name prefix: the view models and coordinators that take
    /// intents, the 8/MMI queries, and `sim.*` (a simulation's coordinator, which agents on
    /// other machines join). `svc.*`, the app's own services, are for plugins.
    public var clientServicePrefixes: [String]
    /// Subtrees every client may read (besides its session's `/s/<id>/`): the published schemas
    /// and the simulations' plans and progress (`/sim/`).
    public var publicSubtrees: [String]
    /// What the host's own user may serve and write besides reading everything: the services and
    /// the subtree of a simulation's coordinator (`flowbus sim --agents`), which is no plugin.
    public var operatorServicePrefixes: [String]
    public var operatorSubtrees: [String]
    /// The host's capability key: a client reads `/s/<id>/` only when its connection presents a
    /// token (`capabilityProperty`) granting at least `watch` on that session. Nil: any session.
    public var capabilities: CapabilityKey?

    /// The ZMTP metadata property (ZMQ_METADATA) a client's Clone sockets carry their session
    /// capability in; libzmq gives it with every message of the connection.
    public static let capabilityProperty = "X-Flowbus-Capability"

    public init(
        clientServicePrefixes: [String] = ["vm.", "coord.", "mmi.", "sim."], publicSubtrees: [String] = ["/schema/", "/sim/"],
        operatorServicePrefixes: [String] = ["sim."], operatorSubtrees: [String] = ["/sim/"], capabilities: CapabilityKey? = nil
    ) {
        self.clientServicePrefixes = clientServicePrefixes
        self.publicSubtrees = publicSubtrees
        self.operatorServicePrefixes = operatorServicePrefixes
        self.operatorSubtrees = operatorSubtrees
        self.capabilities = capabilities
    }

    /// Whether a peer of `peer` class may register as a worker of `service`.
    public func mayServe(_ service: [UInt8], as peer: PeerClass) -> Bool {
        if peer.mayServe { return true }
        return peer == .operator && operatorServicePrefixes.contains { service.starts(with: $0.utf8) }
    }

    /// Whether a peer of `peer` class may write `key`.
    public func mayWrite(_ key: some Collection<UInt8>, as peer: PeerClass) -> Bool {
        if peer.mayServe { return true }
        return peer == .operator && operatorSubtrees.contains { key.starts(with: $0.utf8) }
    }

    /// Whether a peer of `peer` class may send a request to `service`.
    public func mayCall(_ service: [UInt8], as peer: PeerClass) -> Bool {
        if peer.mayReadAll { return true }
        return clientServicePrefixes.contains { service.starts(with: $0.utf8) }
    }

    /// Whether a peer of `peer` class may read keys that start with `prefix` (a snapshot's subtree
    /// or a subscription). A client may read one session at a time — a prefix that starts with
    /// a whole `/s/<id>/`, and with a capability key set only a session its `capability` token
    /// grants — and the public subtrees, never `/s/` as a whole nor everything.
    public func mayRead(_ prefix: [UInt8], as peer: PeerClass, capability: String? = nil) -> Bool {
        if peer.mayReadAll { return true }
        if prefix.elementsEqual("HUGZ".utf8) { return true }
        if publicSubtrees.contains(where: { prefix.starts(with: $0.utf8) }) { return true }
        guard let session = Self.wholeSession(prefix) else { return false }
        guard let capabilities else { return true }
        guard let capability else { return false }
        return capabilities.allows(capability, .watch, session: session)
    }

    /// The id of a prefix `/s/<id>/…` with a non-empty id, else nil.
    static func wholeSession(_ prefix: [UInt8]) -> String? {
        guard prefix.count > 4, prefix[0] == UInt8(ascii: "/"), prefix[1] == UInt8(ascii: "s"), prefix[2] == UInt8(ascii: "/"),
              let end = prefix[3...].firstIndex(of: UInt8(ascii: "/")), end > 3
        else { return nil }
        return String(decoding: prefix[3..<end], as: UTF8.self)
    }
}
