import MessagePath
import ZeroMQ

extension CloneAgentLoop {
    static func makeSocket(
        _ context: ZMQContext, _ type: SocketType, _ role: String, _ configuration: CloneAgentConfiguration,
        _ setUp: (ZMQSocket) throws(ZMQError) -> Void
    ) throws(CloneStartError) -> ZMQSocket {
        do {
            let socket = try ZMQSocket(context: context, type: type, linger: .zero)
            try socket.setMaximumMessageSize(configuration.transportMaxMessageBytes)
            try socket.setReconnectInterval(.milliseconds(100))
            try socket.setReconnectIntervalMax(.seconds(1))
            if let curve = configuration.curve {
                try socket.makeCurveClient(serverKey: curve.serverKey, keyPair: curve.keyPair)
            }
            if let capability = configuration.capability {
                try socket.setMetadata(name: BusAccess.capabilityProperty, value: capability)
            }
            try setUp(socket)
            return socket
        } catch {
            throw .socket(role: role, error)
        }
    }

    static func makeSnapshotSocket(
        _ context: ZMQContext, _ endpoints: CloneEndpoints, _ configuration: CloneAgentConfiguration
    ) throws(CloneStartError) -> ZMQSocket {
        let socket = try makeSocket(context, .dealer, "snapshot", configuration) { _ throws(ZMQError) in }
        try connect(socket, endpoints.snapshot, "snapshot")
        return socket
    }

    static func connect(_ socket: ZMQSocket, _ endpoint: String, _ role: String) throws(CloneStartError) {
        do {
            try socket.connect(endpoint)
        } catch {
            throw .connect(endpoint: endpoint, role: role, error)
        }
    }

    static func subscribe(_ socket: ZMQSocket, to prefix: String) throws(CloneStartError) {
        do {
            try socket.subscribe(prefix)
        } catch {
            throw .socket(role: "subscriber", error)
        }
    }

    /// Drops subtrees another one already covers, so every key belongs to exactly one subscription.
    static func withoutOverlaps(_ subtrees: [String]) -> [String] {
        var kept: [String] = []
        for subtree in subtrees.sorted(by: { $0.utf8.count < $1.utf8.count })
        where !kept.contains(where: { subtree.utf8.starts(with: $0.utf8) }) {
            kept.append(subtree)
        }
        return kept
    }
}
