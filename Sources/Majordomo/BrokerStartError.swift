import ZeroMQ

/// Why a broker could not start; each says what to do about it.
public enum BrokerStartError: Error, CustomStringConvertible, Sendable {
    case addressInUse(endpoint: String)
    case bindFailed(endpoint: String, ZMQError)
    case socketSetup(ZMQError)
    case invalidConfiguration(String)
    case system(String)

    public var description: String {
        switch self {
        case .addressInUse(let endpoint):
            "cannot bind the broker to \(endpoint): address in use; another flowbus host may be running; `flowbus down` or pick another --broker endpoint"
        case .bindFailed(let endpoint, let error):
            "cannot bind the broker to \(endpoint): \(error.message); check the endpoint (tcp://127.0.0.1:5555, tcp://127.0.0.1:*, ipc:///path) and that its folder exists and is writable"
        case .socketSetup(let error):
            "cannot set up the broker's ROUTER socket: \(error); check the CURVE key and that libzmq was built with CURVE"
        case .invalidConfiguration(let text):
            "invalid broker configuration: \(text)"
        case .system(let text):
            text
        }
    }
}
