import MessagePath
import Foundation
import ZeroMQ

/// How a client waits and retries (Lazy Pirate).
public struct ClientConfiguration: Sendable {
    /// How long one try waits for the reply.
    public var timeout: Duration = .milliseconds(2500)
    /// Tries in all, each on a fresh socket, before `request` gives up.
    public var tries: Int = 3
    /// With a cap, each try waits twice as long as the one before, up to the cap: a lost request
    /// costs only the short first wait, and a late try still outlasts a slow answer (the broker
    /// answers UNKNOWN_SERVICE after 5 s). Nil: every try waits `timeout`.
    public var timeoutCap: Duration?
    /// Send and receive high-water marks, in messages (pipelined mode keeps many in flight).
    public var highWaterMark: Int = 100_000
    /// The broker's CURVE public key and this client's key pair; nil connects without CURVE.
    public var curveServerKey: CurveKey?
    public var curveKeyPair: CurveKeyPair?
    /// The socket's routing id (optional; the broker makes one up otherwise).
    public var routingID: String?
    /// A one-frame reply body that means "your request arrived damaged, nothing was done":
    /// `request` sends the request again at once, without using up a try. Flowbus sets it to
    /// `ErrorReply.damagedFrame`; nil (plain 7/MDP) returns every reply as the answer.
    public var resendWhenAnswered: Frame?
    /// At most this many such resends of one request a try; past them the request uses its
    /// next try, and with none left the damage answer is returned.
    /// Damage is answered at once, so a resend costs a round trip, not a timeout.
    public var damagedResends = 8
    /// A one-frame reply body that means "applied, but not yet durable; ask again": `request`
    /// sends the request again at once, as its next try (the worker already waited before it
    /// answered so). Flowbus sets it to `ErrorReply.unsettledFrame`; after the last try that
    /// reply is returned. Nil: every reply is the answer.
    public var retryWhenAnswered: Frame?

    public init(
        timeout: Duration = .milliseconds(2500),
        tries: Int = 3,
        timeoutCap: Duration? = nil,
        curveServerKey: CurveKey? = nil,
        curveKeyPair: CurveKeyPair? = nil,
        routingID: String? = nil
    ) {
        self.timeout = timeout
        self.tries = tries
        self.timeoutCap = timeoutCap
        self.curveServerKey = curveServerKey
        self.curveKeyPair = curveKeyPair
        self.routingID = routingID
    }

    /// How long try `attempt` (1-based) waits, starting from `timeout`.
    public func wait(forTry attempt: Int, startingAt timeout: Duration) -> Duration {
        guard let timeoutCap, attempt > 1 else { return timeout }
        var wait = timeout
        for _ in 1..<attempt where wait < timeoutCap { wait = wait * 2 }
        return max(timeout, min(wait, timeoutCap))
    }

    /// The longest a request can take over all its tries.
    public func patience(startingAt timeout: Duration, tries: Int) -> Duration {
        (1...max(1, tries)).reduce(.zero) { $0 + wait(forTry: $1, startingAt: timeout) }
    }
}

/// One reply a client received.
public struct MajordomoReply: Sendable, Equatable {
    public let service: String
    public let body: [Frame]

    public init(service: String, body: [Frame]) {
        self.service = service
        self.body = body
    }
}

/// Why a client request failed; each says what to check.
public enum MajordomoClientError: Error, CustomStringConvertible {
    case noReply(service: String, endpoint: String, tries: Int, timeout: Duration)
    case transport(ZMQError, endpoint: String)
    case invalidService(String)
    case curveKeysIncomplete

    public var description: String {
        switch self {
        case .noReply(let service, let endpoint, let tries, let timeout):
            "no reply from service \(service) at \(endpoint) after \(tries) \(tries == 1 ? "try" : "tries") over \(Self.format(timeout)); is a worker for it running? try `flowbus ps`"
        case .transport(let error, let endpoint):
            "client socket to \(endpoint) failed: \(error); check the broker endpoint and that the host is up (`flowbus ps`)"
        case .invalidService(let name):
            "'\(name)' is not a service name; name a service such as vm.checkout (non-empty)"
        case .curveKeysIncomplete:
            "CURVE needs both the broker's public key and this client's key pair; give both or neither"
        }
    }

    static func format(_ duration: Duration) -> String {
        let seconds = duration.seconds
        if seconds < 1 { return "\(Int((seconds * 1000).rounded())) ms" }
        let text = String(format: "%.1f", seconds)
        return (text.hasSuffix(".0") ? String(text.dropLast(2)) : text) + " s"
    }
}
