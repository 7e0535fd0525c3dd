import Foundation
import Logging
import MessagePath
import Synchronization
import ZeroMQ

/// Who may connect to the bus and as whom. In closed mode (the default) a ZAP handler sees every
/// connection to the broker and the Clone server and names its class in the User-Id that libzmq
/// then attaches to each of its messages (`PeerClass`); the broker and the server enforce
/// `BusAccess` with it. With CURVE, only allow-listed client keys and the plugins' key connect.
struct BusSecurity: Sendable {
    static let zapDomain = "flowbus"

    struct Curve: Sendable {
        let serverKeys: CurveKeyPair
        let pluginKeys: CurveKeyPair
    }

    let curve: Curve?
    /// nil in open mode without CURVE: no handler runs.
    let authenticator: ZAPAuthenticator?
    /// What each class of peer may do; nil in open mode.
    let access: BusAccess?
    /// New client connections per address, counted where the ZAP handler admits them (closed mode).
    var connections: ConnectionThrottle? = nil

    var zapDomain: String? { authenticator == nil ? nil : Self.zapDomain }

    /// What a plugin needs to connect: the server's public key and its own key pair; on a
    /// closed host, the session-capability key its runtimes check requests with.
    var pluginEnvironment: [String: String] {
        var variables: [String: String] = [:]
        if let key = access?.capabilities { variables[BusVariables.sessionKey] = key.hex }
        // Closed, plugins connect on the run directory's ipc endpoints, which have no CURVE.
        guard let curve, access == nil else { return variables }
        variables[BusVariables.serverKey] = curve.serverKeys.publicKey.z85
        variables[BusVariables.clientPublicKey] = curve.pluginKeys.publicKey.z85
        variables[BusVariables.clientSecretKey] = curve.pluginKeys.secretKey.z85
        return variables
    }

    /// `pluginName` names a supervised plugin by pid (for the logs); any child of the host is one.
    /// `capabilities`: the closed bus's session-capability key (a fresh one when not given).
    static func start(
        configuration: HostConfiguration, context: ZMQContext, logger: Logger, capabilities: CapabilityKey = .generate(),
        pluginName: @escaping @Sendable (Int32) -> String? = { _ in nil }
    ) throws -> BusSecurity {
        let curve = try readCurve(configuration)
        var allowed: Set<CurveKey> = []
        if curve != nil, let allowPath = configuration.allowListPath { allowed = try KeyFiles.readAllowList(path: allowPath) }
        let securityLogger = logger.with(component: "zap")
        if configuration.openAccess {
            logger.warning("OPEN MODE: every peer that can connect may register as a worker, call any service and read or write any key; use it only for the zguide's reference peers on loopback (drop --open to close it)")
            guard let curve else { return BusSecurity(curve: nil, authenticator: nil, access: nil) }
            allowed.insert(curve.pluginKeys.publicKey)
            let authenticator = ZAPAuthenticator(context: context, allowedClientKeys: allowed) { key, admitted, address in
                if !admitted { refusedKey(key, address, securityLogger) }
            }
            try authenticator.start()
            return BusSecurity(curve: curve, authenticator: authenticator, access: nil)
        }
        let clientKeys = allowed
        let throttle = ConnectionThrottle(configuration.connectionRate)
        /// A client connection, admitted when its address is within the connection rate.
        @Sendable func admitClient(_ userID: String, _ address: String) -> ZAPDecision {
            guard throttle.limiter.allow(address) else {
                throttle.refused()
                if throttle.logLimiter.shouldLog(peer: Array(address.utf8), kind: "connection-rate") {
                    securityLogger.warning("refused a connection: too many new connections from this address (logged once per address per 10 s)", metadata: [
                        "flowbus.peer": "\(address)",
                        "flowbus.limit": "\(Int(throttle.limiter.limit.perSecond))/s, \(Int(throttle.limiter.limit.burst)) at once",
                        "flowbus.remedy": "the client's libzmq connects again by itself; reuse connections, or raise flowbus up --connection-rate",
                    ])
                }
                return .deny(reason: "too many new connections from \(address); wait and connect again")
            }
            return .admit(userID: userID)
        }
        let host = getpid()
        let user = geteuid()
        let pluginKey = curve?.pluginKeys.publicKey
        let authenticator = ZAPAuthenticator(context: context) { request in
            if let key = request.curveKey {
                if key == pluginKey { return .admit(userID: PeerClass.plugin.userID("curve")) }
                guard clientKeys.contains(key) else {
                    refusedKey(key, request.address, securityLogger)
                    return .deny(reason: "client key not on the allow-list")
                }
                return admitClient(PeerClass.client.userID(String(key.z85.prefix(8))), request.address)
            }
            if curve != nil, request.ipcPeer == nil {
                // CURVE is on: nothing else may connect on its tcp endpoints.
                refusedKey(nil, request.address, securityLogger)
                return .deny(reason: "only CURVE clients with an allowed key may connect")
            }
            guard let peer = request.ipcPeer else {
                return admitClient(PeerClass.client.userID(request.address), request.address)
            }
            if peer.pid == host { return .admit(userID: PeerClass.host.userID()) }
            if parentPID(of: peer.pid) == host {
                return .admit(userID: PeerClass.plugin.userID(pluginName(peer.pid) ?? "pid \(peer.pid)"))
            }
            // Only the host's user (or root) can reach a socket in the owner-only run directory.
            if peer.uid == user || peer.uid == 0 { return .admit(userID: PeerClass.operator.userID("pid \(peer.pid)")) }
            securityLogger.warning("refused an ipc peer of another user", metadata: ["flowbus.peer": "\(request.address)"])
            return .deny(reason: "ipc peer of another user")
        }
        try authenticator.start()
        logger.info("bus closed: only the host's plugins serve and write state; clients reach vm.*, coord.* and their own session", metadata: [
            "flowbus.curve": "\(curve == nil ? "off" : "on")", "flowbus.allowed_keys": "\(clientKeys.count)",
        ])
        return BusSecurity(curve: curve, authenticator: authenticator, access: BusAccess(capabilities: capabilities), connections: throttle)
    }

    private static func readCurve(_ configuration: HostConfiguration) throws -> Curve? {
        guard let secretPath = configuration.curveSecretPath else { return nil }
        guard configuration.allowListPath != nil else {
            throw HostError.unreadableKeyFile(path: secretPath, reason: "CURVE needs an allow-list too: pass --allow FILE with the clients' public keys")
        }
        return Curve(serverKeys: try KeyFiles.readSecret(path: secretPath), pluginKeys: try CurveKeyPair.generate())
    }

    private static func refusedKey(_ key: CurveKey?, _ address: String, _ logger: Logger) {
        logger.warning("refused a CURVE client whose key is not on the allow-list", metadata: [
            "flowbus.peer": "\(address)", "flowbus.client_key": "\(key?.z85 ?? "none")",
        ])
    }

    /// The parent pid of a process, from `/proc/<pid>/stat` (the field after the command name,
    /// which may itself hold spaces and parentheses); nil when it has gone.
    static func parentPID(of pid: Int32) -> Int32? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 1 else { return nil }
        return Int32(fields[1])
    }
}

/// The connection rate limit of a closed host: a token bucket per client address, and what it refused.
final class ConnectionThrottle: Sendable {
    let limiter: PeerRateLimiter
    let logLimiter = PeerLogLimiter()
    private let refusals = Atomic<Int>(0)

    init(_ limit: RateLimit) {
        limiter = PeerRateLimiter(limit)
    }

    func refused() { refusals.add(1, ordering: .relaxed) }
    var refusedCount: Int { refusals.load(ordering: .relaxed) }
}
