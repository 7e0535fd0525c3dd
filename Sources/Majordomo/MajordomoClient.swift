import MessagePath
import Logging
import ZeroMQ

/// A 7/MDP client over one DEALER. Not thread-safe: create and use it on one thread.
///
/// `request` is synchronous with Lazy Pirate retries; `send` + `receive` keep many requests
/// in flight (benchmarks, tools). Do not mix the two on one client: a late pipelined reply
/// would be taken for the synchronous one's if the service is the same.
public final class MajordomoClient {
    public let endpoint: String
    let context: ZMQContext
    let configuration: ClientConfiguration
    let logger: Logger
    var socket: ZMQSocket
    var poller: ZMQPoller
    /// Replies dropped because they answered an earlier request (`request(…accepts:)`).
    public private(set) var strayReplies = 0
    /// Requests sent again at once because the worker said it got them damaged.
    public private(set) var damagedResent = 0
    /// Tries spent because the worker answered that its writes were not yet confirmed.
    public private(set) var retriedWhenAnswered = 0
    /// The last service asked for, as its name and its frame (`serviceFrame`).
    var lastService: (name: String, frame: Frame)?

    public init(
        context: ZMQContext, endpoint: String,
        configuration: ClientConfiguration = ClientConfiguration(), logger: Logger
    ) throws(MajordomoClientError) {
        guard (configuration.curveServerKey == nil) == (configuration.curveKeyPair == nil) else { throw .curveKeysIncomplete }
        self.context = context
        self.endpoint = endpoint
        self.configuration = configuration
        self.logger = logger
        (socket, poller) = try Self.open(context: context, endpoint: endpoint, configuration: configuration)
    }

    static func open(
        context: ZMQContext, endpoint: String, configuration: ClientConfiguration
    ) throws(MajordomoClientError) -> (ZMQSocket, ZMQPoller) {
        do {
            let socket = try ZMQSocket(context: context, type: .dealer, linger: .zero)
            try socket.setSendHighWaterMark(configuration.highWaterMark)
            try socket.setReceiveHighWaterMark(configuration.highWaterMark)
            if let id = configuration.routingID { try socket.setRoutingID(Array(id.utf8)) }
            if let serverKey = configuration.curveServerKey, let keyPair = configuration.curveKeyPair {
                try socket.makeCurveClient(serverKey: serverKey, keyPair: keyPair)
            }
            try socket.connect(endpoint)
            let poller = ZMQPoller()
            poller.add(socket)
            return (socket, poller)
        } catch {
            throw .transport(error, endpoint: endpoint)
        }
    }

    /// Sends a request and waits for its reply. On each timeout the socket is closed, a new one
    /// opened and the request sent again (workers are idempotent); after the last try it throws `.noReply`.
    /// A reply equal to `ClientConfiguration.resendWhenAnswered` (the worker got the request
    /// damaged) sends it again at once on the same socket, `damagedResends` times a try; once
    /// the last try's are spent, that reply is returned. A reply equal to
    /// `retryWhenAnswered` (applied, not yet durable) sends it again at once as the next try.
    ///
    /// `accepts` tells a reply to this request from one left over from an earlier one (a reply to
    /// a duplicated or retried request that came late): those are dropped and counted
    /// (`strayReplies`), as MDP's client has no request id of its own.
    public func request(
        service: String, body: [Frame], timeout: Duration? = nil, tries: Int? = nil, accepts: ([Frame]) -> Bool = { _ in true }
    ) throws(MajordomoClientError) -> [Frame] {
        guard !service.isEmpty else { throw .invalidService(service) }
        let serviceFrame = serviceFrame(service)
        let timeout = timeout ?? configuration.timeout
        let tries = max(1, tries ?? configuration.tries)
        var attempt = 1
        var resent = 0
        var timedOut = false
        while attempt <= tries {
            if timedOut {
                logger.debug("no reply yet; retrying on a new socket", metadata: [
                    "flowbus.service": "\(service)", "flowbus.try": "\(attempt)",
                ])
                (socket, poller) = try Self.open(context: context, endpoint: endpoint, configuration: configuration)
            }
            do {
                try sendRequest(serviceFrame, body)
            } catch {
                throw .transport(error, endpoint: endpoint)
            }
            let wait = configuration.wait(forTry: attempt, startingAt: timeout)
            guard let reply = try awaitReply(for: serviceFrame, until: MonotonicTime.now() + wait, accepts: accepts) else {
                timedOut = true
                attempt += 1
                continue
            }
            if let resend = configuration.resendWhenAnswered, reply.count == 1, reply[0] == resend {
                if resent == configuration.damagedResends {
                    // This try's resends are spent: the next try starts a new round of them, so
                    // a request damaged many times over is sent again as long as it has tries.
                    guard attempt < tries else { return reply }
                    attempt += 1
                    resent = 0
                } else {
                    resent += 1
                }
                damagedResent += 1
                logger.debug("the worker got the request damaged; sending it again", metadata: [
                    "flowbus.service": "\(service)", "flowbus.resend": "\(resent)",
                ])
                timedOut = false
                continue
            }
            if let retry = configuration.retryWhenAnswered, attempt < tries, reply.count == 1, reply[0] == retry {
                attempt += 1
                retriedWhenAnswered += 1
                logger.debug("the worker has not stored its answer yet; asking again", metadata: [
                    "flowbus.service": "\(service)", "flowbus.try": "\(attempt)",
                ])
                timedOut = false
                continue
            }
            return reply
        }
        // Leave a clean socket behind: a reply that comes late must not answer the next request.
        (socket, poller) = try Self.open(context: context, endpoint: endpoint, configuration: configuration)
        throw .noReply(service: service, endpoint: endpoint, tries: tries, timeout: configuration.patience(startingAt: timeout, tries: tries))
    }

    private func awaitReply(for service: Frame, until deadline: MonotonicTime, accepts: ([Frame]) -> Bool) throws(MajordomoClientError) -> [Frame]? {
        while true {
            let now = MonotonicTime.now()
            guard now < deadline else { return nil }
            do {
                // In nanoseconds: no `Duration` arithmetic a wait.
                guard try poller.poll(timeoutNanoseconds: now.nanoseconds(until: deadline)) > 0 else { continue }
                reading: while true {
                    switch try readReply() {
                    case .nothing:
                        break reading
                    case .dropped:
                        continue
                    case .reply(let from, let body):
                        guard from == service else { continue }
                        if accepts(body) { return body }
                        strayReplies += 1
                    }
                }
            } catch {
                throw .transport(error, endpoint: endpoint)
            }
        }
    }

    /// What one read of the socket found.
    enum ReadReply {
        /// Nothing was waiting.
        case nothing
        /// A message that is not a client REPLY (dropped).
        case dropped
        case reply(service: Frame, body: [Frame])
    }

    /// The most frames a reply may have (a broker passes at most
    /// `BrokerConfiguration.maxFramesPerMessage`, 256 unless set otherwise).
    static let maxParts = 1024

    /// Reads the next message where libzmq holds it: only a reply's body becomes arrays (its
    /// service name comes from the socket's cache of recent short frames).
    func readReply() throws(ZMQError) -> ReadReply {
        var read = ReadReply.dropped
        let socket = socket
        guard try socket.receiveParts(dontWait: true, maxParts: Self.maxParts, maxBytes: .max, { parts in
            guard !parts.truncated, let layout = try? MDPLayout.parse(parts, from: 0), layout.kind == .client else { return }
            read = .reply(service: socket.frame(of: parts[layout.subject]), body: parts.frames(layout.bodyStart..<parts.count))
        }) else { return .nothing }
        return read
    }
}

@available(*, unavailable)
extension MajordomoClient: Sendable {}
