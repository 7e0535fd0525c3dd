import FlowProtocol

/// What can go wrong between a client and the bus; each says what happened and what to do.
public enum SessionClientError: Error, Sendable, CustomStringConvertible {
    case curveKeyPairMissing(serverKey: String)
    case cannotConnect(endpoint: String, reason: String)
    case noReply(service: String, reason: String)
    case unexpectedReply(service: String, kind: String)
    case refused(service: String, method: String, error: WireError)
    case noSnapshot(endpoint: String, timeout: Duration)
    /// The Clone server refused to let this client read the session (no capability for it).
    case readRefused(session: String, reason: String)
    case noScreen(session: String)
    case unknownAction(action: String, screen: String, known: [String])
    case stopped
    case invalidSession(String, reason: String)

    public var description: String {
        switch self {
        case .curveKeyPairMissing(let key):
            "the host runs with CURVE (server key \(key)) and this client has no key pair: make one with `flowbus keys --out NAME`, add its public key to the host's allow-list, and pass it (BusEndpoints.clientKeyPair)"
        case .cannotConnect(let endpoint, let reason):
            "cannot connect to \(endpoint): \(reason); check that the host is running (`flowbus ps`) or start one with `flowbus up`"
        case .noReply(let service, let reason):
            "\(service) did not answer: \(reason). Whether it was applied is unknown; sending it again is safe (the same idempotency key is answered, never applied twice)"
        case .unexpectedReply(let service, let kind):
            "\(service) answered with a \(kind.isEmpty ? "message of no kind" : kind), which is not the reply this call expects; the plugin serving it may be of another version: check `flowbus ps`"
        case .refused(let service, let method, let error):
            "\(service) refused \(method): \(error.message)" + (error.hint.isEmpty ? "" : "; \(error.hint)")
        case .noSnapshot(let endpoint, let timeout):
            "the Clone server at \(endpoint) sent no snapshot within \(timeout); is the host running? check `flowbus ps`, or start one with `flowbus up`"
        case .readRefused(let session, let reason):
            "the host refused to show session \(session): \(reason)"
        case .noScreen(let session):
            "session \(session) shows no screen yet, so there is nothing to act on; wait for its navigation (waitUntil) or check that coord.app runs (`flowbus ps`)"
        case .unknownAction(let action, let screen, let known):
            known.isEmpty
                ? "the \(screen) screen offers no action \"\(action)\" (it offers none yet: its view model has not published its state); wait for the screen, or check `flowbus ps` that vm.\(screen) runs"
                : "the \(screen) screen offers no action \"\(action)\" now; it offers \(known.joined(separator: ", "))"
        case .stopped:
            "this session client has been stopped; open or attach a new one"
        case .invalidSession(let id, let reason):
            "\"\(id)\" is not a session id (\(reason)); use an id `flowbus sessions` lists"
        }
    }
}
