import ZeroMQ

/// Why a clone server or agent could not start, with what to do about it.
public enum CloneStartError: Error, Sendable, CustomStringConvertible {
    case bind(endpoint: String, role: String, ZMQError)
    case connect(endpoint: String, role: String, ZMQError)
    case socket(role: String, ZMQError)
    case invalidConfiguration(String)
    case system(String)

    public var description: String {
        switch self {
        case .bind(let endpoint, let role, let error):
            if error.code == .addressInUse {
                return "the clone \(role) socket could not bind \(endpoint): the address is in use. Another flowbus host "
                    + "may be running (stop it with `flowbus down`), or choose another port or ipc path"
            }
            return "the clone \(role) socket could not bind \(endpoint): \(error.message). Check the endpoint "
                + "(tcp://HOST:PORT or ipc://PATH in a writable folder)"
        case .connect(let endpoint, let role, let error):
            return "the clone agent's \(role) socket could not connect to \(endpoint): \(error.message). "
                + "Check the endpoint (tcp://HOST:PORT or ipc://PATH)"
        case .socket(let role, let error):
            return "the clone \(role) socket could not be set up: \(error). The ZeroMQ context may be shut down"
        case .invalidConfiguration(let reason):
            return "invalid clone configuration: \(reason)"
        case .system(let reason):
            return reason
        }
    }
}
