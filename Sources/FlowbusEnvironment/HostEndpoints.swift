import Foundation

/// Every endpoint of a host: the broker, the three Clone ports, and the control socket.
public struct HostEndpoints: Codable, Sendable, Equatable {
    public var broker: String
    public var cloneSnapshot: String
    public var clonePublisher: String
    public var cloneCollector: String
    public var control: String

    public init(broker: String, cloneSnapshot: String, clonePublisher: String, cloneCollector: String, control: String) {
        self.broker = broker
        self.cloneSnapshot = cloneSnapshot
        self.clonePublisher = clonePublisher
        self.cloneCollector = cloneCollector
        self.control = control
    }

    /// The environment a plugin reads them from (see Protocols/README.md).
    public var environment: [String: String] {
        [
            BusVariables.broker: broker,
            BusVariables.cloneSnapshot: cloneSnapshot,
            BusVariables.clonePublisher: clonePublisher,
            BusVariables.cloneCollector: cloneCollector,
        ]
    }
}

/// Where an endpoint listens, as far as exposure goes.
public enum EndpointExposure: Equatable, Sendable {
    /// ipc://, inproc://, or TCP on a loopback address: only this machine can reach it.
    case local
    /// TCP on any other address: reachable from the network, so CURVE is required.
    case network(host: String)

    public init(endpoint: String) {
        guard endpoint.hasPrefix("tcp://") else {
            self = .local
            return
        }
        let address = String(endpoint.dropFirst("tcp://".count))
        let host: String
        if address.hasPrefix("["), let close = address.firstIndex(of: "]") {
            host = String(address[address.index(after: address.startIndex)..<close])
        } else {
            host = String(address.split(separator: ":", omittingEmptySubsequences: false).first ?? "")
        }
        let loopback = host == "localhost" || host == "::1" || host.hasPrefix("127.")
        self = loopback ? .local : .network(host: host)
    }
}
