import Clone
import FlowbusEnvironment
import Foundation
import MessagePath
import ZeroMQ

/// Where a client finds the bus: the broker and the Clone server's three endpoints, read from a
/// running host's announcement (`<run-dir>/host.json`) or given explicitly.
public struct BusEndpoints: Sendable, Equatable {
    public var broker: String
    public var clone: CloneEndpoints
    /// The host's CURVE public key (z85) when it runs with CURVE; a client then needs `clientKeyPair`.
    public var serverPublicKey: String?
    /// This client's CURVE key pair, for a host that runs with CURVE (`flowbus keys` makes one).
    public var clientKeyPair: CurveKeyPair?
    /// The host's session-capability key, when this process may read it (the host's own user, on
    /// its machine: `<run-dir>/session.key`). With it a client makes its own capability for any
    /// session (a local operator's tools); without, it uses the ones openSession gives.
    public var capabilities: CapabilityKey?

    public init(
        broker: String, clone: CloneEndpoints, serverPublicKey: String? = nil, clientKeyPair: CurveKeyPair? = nil,
        capabilities: CapabilityKey? = nil
    ) {
        self.broker = broker
        self.clone = clone
        self.serverPublicKey = serverPublicKey
        self.clientKeyPair = clientKeyPair
        self.capabilities = capabilities
    }

    /// The endpoints a host announced in its descriptor.
    /// The endpoints a process on the host's machine uses: its ipc ones in the run directory where
    /// the host has them (a local tool is then an operator, not a tcp client), else the announced ones.
    public init(descriptor: HostDescriptor) {
        let local = descriptor.localEndpoints
        let endpoints = local ?? descriptor.endpoints
        self.init(
            broker: endpoints.broker,
            clone: CloneEndpoints(
                snapshot: endpoints.cloneSnapshot, publisher: endpoints.clonePublisher,
                collector: endpoints.cloneCollector),
            // A closed host's ipc endpoints (its local ones are ipc) have no CURVE: only its user reaches them.
            serverPublicKey: descriptor.access == .closed && endpoints.broker.hasPrefix("ipc://") ? nil : descriptor.serverPublicKey,
            capabilities: RunDirectory(path: descriptor.runDirectory).readSessionKey().flatMap(CapabilityKey.init(hex:)))
    }

    /// The endpoints of the host running in `runDirectory` (default: `$FLOWBUS_RUN_DIR` or
    /// `/tmp/flowbus-<uid>/default`); throws `RunDirectoryError.noHost` ("start one with `flowbus up`") when none is.
    public static func announced(by runDirectory: RunDirectory = .defaultDirectory()) throws -> BusEndpoints {
        BusEndpoints(descriptor: try runDirectory.requireLiveHost())
    }

    /// The endpoints a plugin process gets from its host (`FLOWBUS_BROKER`, `FLOWBUS_CLONE_*`), or nil
    /// when any is missing.
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> BusEndpoints? {
        let variables = BusVariables(environment)
        guard let endpoints = variables.endpoints else { return nil }
        return BusEndpoints(
            broker: endpoints.broker,
            clone: CloneEndpoints(snapshot: endpoints.snapshot, publisher: endpoints.publisher, collector: endpoints.collector),
            serverPublicKey: variables.serverKey)
    }

    /// The CURVE settings for this client's sockets: nil without CURVE, or the server key and this
    /// client's key pair; throws when the host needs CURVE and no key pair was given.
    public func curve() throws(SessionClientError) -> (serverKey: CurveKey, keyPair: CurveKeyPair)? {
        guard let text = serverPublicKey else { return nil }
        guard let keyPair = clientKeyPair else { throw .curveKeyPairMissing(serverKey: text) }
        do {
            return (try CurveKey(z85: text), keyPair)
        } catch {
            throw .curveKeyPairMissing(serverKey: text)
        }
    }
}
