import Foundation
import Logging
import ZeroMQ

/// CURVE on the bus: the host's server key pair, a key pair for its own plugins (admitted
/// automatically), and the ZAP handler that admits only allow-listed client keys.
struct BusSecurity: Sendable {
    static let zapDomain = "flowbus"

    let serverKeys: CurveKeyPair
    let pluginKeys: CurveKeyPair
    let authenticator: ZAPAuthenticator

    /// What a plugin needs to connect: the server's public key and its own key pair.
    var pluginEnvironment: [String: String] {
        [
            BusVariables.serverKey: serverKeys.publicKey.z85,
            BusVariables.clientPublicKey: pluginKeys.publicKey.z85,
            BusVariables.clientSecretKey: pluginKeys.secretKey.z85,
        ]
    }

    /// nil when the configuration asks for no CURVE (only allowed on loopback and ipc).
    static func start(configuration: HostConfiguration, context: ZMQContext, logger: Logger) throws -> BusSecurity? {
        guard let secretPath = configuration.curveSecretPath else { return nil }
        guard let allowPath = configuration.allowListPath else {
            throw HostError.unreadableKeyFile(path: secretPath, reason: "CURVE needs an allow-list too: pass --allow FILE with the clients' public keys")
        }
        let serverKeys = try KeyFiles.readSecret(path: secretPath)
        var allowed = try KeyFiles.readAllowList(path: allowPath)
        let pluginKeys = try CurveKeyPair.generate()
        allowed.insert(pluginKeys.publicKey)
        let securityLogger = logger.with(component: "zap")
        let authenticator = ZAPAuthenticator(context: context, allowedClientKeys: allowed) { key, admitted, address in
            if !admitted {
                securityLogger.warning("refused a CURVE client whose key is not on the allow-list", metadata: [
                    "flowbus.peer": "\(address)", "flowbus.client_key": "\(key?.z85 ?? "none")",
                ])
            }
        }
        try authenticator.start()
        logger.info("CURVE on: only allow-listed client keys may connect", metadata: [
            "flowbus.server_key": "\(serverKeys.publicKey.z85)", "flowbus.allowed": "\(allowed.count - 1)",
        ])
        return BusSecurity(serverKeys: serverKeys, pluginKeys: pluginKeys, authenticator: authenticator)
    }
}
