/// The three endpoints of a clone server: snapshot (ROUTER), publisher (PUB), collector (SUB).
public struct CloneEndpoints: Sendable, Hashable, Codable {
    public var snapshot: String
    public var publisher: String
    public var collector: String

    public init(snapshot: String, publisher: String, collector: String) {
        self.snapshot = snapshot
        self.publisher = publisher
        self.collector = collector
    }

    /// Derives the three endpoints from one base, as 12/CHP lays out its ports:
    /// `tcp://HOST:P` → P, P+1, P+2; `ipc://PATH` → `PATH.snapshot`, `PATH.publisher`, `PATH.collector`.
    public init(base: String) throws(CloneEndpointError) {
        if base.hasPrefix("ipc://") {
            guard base.count > "ipc://".count else { throw .invalid(base, reason: "the ipc:// path is empty") }
            self.init(snapshot: base + ".snapshot", publisher: base + ".publisher", collector: base + ".collector")
            return
        }
        guard base.hasPrefix("tcp://") else {
            throw .invalid(base, reason: "only tcp:// and ipc:// endpoints are supported")
        }
        guard let colon = base.lastIndex(of: ":"), colon > base.index(base.startIndex, offsetBy: 5) else {
            throw .invalid(base, reason: "it has no port")
        }
        let host = base[..<colon]
        let portText = base[base.index(after: colon)...]
        guard host.count > "tcp://".count else { throw .invalid(base, reason: "it has no host") }
        guard let port = Int(portText), (1...65533).contains(port) else {
            throw .invalid(base, reason: "'\(portText)' is not a port from 1 to 65533 (the server also takes the next two)")
        }
        self.init(snapshot: "\(host):\(port)", publisher: "\(host):\(port + 1)", collector: "\(host):\(port + 2)")
    }
}

public enum CloneEndpointError: Error, Sendable, Equatable, CustomStringConvertible {
    case invalid(String, reason: String)

    public var description: String {
        switch self {
        case .invalid(let base, let reason):
            "'\(base)' is not a clone server endpoint: \(reason). Use tcp://HOST:PORT (the server binds PORT, "
                + "PORT+1 and PORT+2) or ipc://PATH (PATH.snapshot, PATH.publisher, PATH.collector)"
        }
    }
}
