import Foundation
import Logging
import MessagePath
import ZeroMQ

/// A 7/MDP worker over one DEALER. Not thread-safe: create and use it on one thread, the one
/// serving it, but for `replyWhileWaiting`, which another thread may call when the serving thread
/// holds `waitGate`.
public final class MajordomoWorker {
    public let endpoint: String
    public let service: String
    let serviceFrame: Frame
    let context: ZMQContext
    let configuration: WorkerConfiguration
    let logger: Logger

    var socket: ZMQSocket?
    var poller = ZMQPoller() {
        didSet { poller.gate = waitGate }
    }
    /// Held by the serving thread at every moment but while `receive` sleeps in its poll, if the
    /// serving thread sets it (and takes it first): other threads may then answer requests
    /// (`replyWhileWaiting`). Nil: the serving thread alone uses the worker.
    public var waitGate: WaitGate? {
        didSet { poller.gate = waitGate }
    }
    /// Another thread's way to make `receive` return early (`watch`), and its index in `poller`.
    var wake: WakeSignal?
    var wakeIndex: Int?
    var lastHeard = MonotonicTime.now()
    var nextHeartbeat = MonotonicTime.now()
    var reconnectAt: MonotonicTime?
    var backoff: Duration
    let brokerSilence: Duration
    /// The heartbeat interval and the broker's allowed silence in nanoseconds, converted once:
    /// the loop adds and compares them at every request without `Duration`'s 128-bit arithmetic.
    let heartbeatNanoseconds: UInt64
    let brokerSilenceNanoseconds: UInt64

    /// How many times the worker has connected and sent READY (1 after init).
    public internal(set) var connections = 0
    /// How many replies it has sent.
    public internal(set) var replies = 0
    /// Requests received and not yet answered; each HEARTBEAT says it (`held=N`).
    var holding = 0

    /// A HEARTBEAT that says how many requests this worker holds.
    var heartbeatFrames: [Frame] { MDPCommand.heartbeat.frames + [MDP.heldFrame(holding)] }
    /// Messages from the broker that were not valid MDP/Worker, dropped.
    public internal(set) var invalidMessages = 0
    /// How many times `receive` waited in its poller since the worker last connected, for tests
    /// and profiles: requests already on the socket are taken without one.
    public var polls: Int { poller.polls }

    /// Connects and sends READY.
    public init(
        context: ZMQContext, endpoint: String, service: String,
        configuration: WorkerConfiguration = WorkerConfiguration(), logger: Logger
    ) throws(MajordomoWorkerError) {
        guard !service.isEmpty, !service.hasPrefix("mmi.") else { throw .invalidService(service) }
        guard (configuration.curveServerKey == nil) == (configuration.curveKeyPair == nil) else { throw .curveKeysIncomplete }
        guard (1...MDP.maxCredit).contains(configuration.credit) else { throw .invalidCredit(configuration.credit) }
        self.context = context
        self.endpoint = endpoint
        self.service = service
        self.serviceFrame = Array(service.utf8)
        self.configuration = configuration
        self.logger = logger
        self.backoff = configuration.reconnectInitial
        self.brokerSilence = configuration.heartbeatInterval * max(1, configuration.heartbeatLiveness)
        self.heartbeatNanoseconds = configuration.heartbeatInterval.wholeNanoseconds
        self.brokerSilenceNanoseconds = brokerSilence.wholeNanoseconds
        do { try connect() } catch { throw .transport(error, endpoint: endpoint) }
    }

    /// A new socket, connected, with READY sent: how a worker opens (and reopens) its conversation.
    func connect() throws(ZMQError) {
        socket = nil
        let socket = try ZMQSocket(context: context, type: .dealer, linger: .zero)
        if let id = configuration.routingID { try socket.setRoutingID(Array(id.utf8)) }
        // A new conversation: nothing handed over on the old one is held any more.
        holding = 0
        if let serverKey = configuration.curveServerKey, let keyPair = configuration.curveKeyPair {
            try socket.makeCurveClient(serverKey: serverKey, keyPair: keyPair)
        }
        try socket.setSendTimeout(configuration.heartbeatInterval)
        try socket.connect(endpoint)
        self.socket = socket
        poller = ZMQPoller()
        poller.add(socket)
        wakeIndex = wake.map { poller.add(fileDescriptor: $0.fileDescriptor) }
        connections += 1
        reconnectAt = nil
        let now = MonotonicTime.now()
        lastHeard = now
        send(MDPCommand.ready(service: serviceFrame, credit: configuration.credit).frames, now: now)
    }

    /// Drops the socket and schedules a new conversation after the current backoff, which then doubles.
    func scheduleReconnect(_ why: String, now: MonotonicTime) {
        logger.info("worker reconnecting to broker: \(why)", metadata: [
            "flowbus.service": "\(service)", "flowbus.endpoint": "\(endpoint)", "flowbus.backoff": "\(backoff)",
        ])
        socket = nil
        poller = ZMQPoller()
        wakeIndex = nil
        reconnectAt = now + backoff
        backoff = min(backoff * 2, configuration.reconnectMax)
    }

    /// Sends a whole message without ever blocking longer than the send timeout; false if it could not.
    @discardableResult
    func send(_ frames: [Frame], now: MonotonicTime) -> Bool {
        send(now: now) { socket throws(ZMQError) in try socket.send(frames) }
    }

    /// `"" MDPW01 0x03 client "" body...`, written frame by frame: no array of the whole message.
    func sendReply(client: Frame, body: [Frame], now: MonotonicTime) -> Bool {
        send(now: now) { socket throws(ZMQError) in
            // Only the first part can wait for room (the send timeout); the rest follow it.
            guard try socket.send(MDP.empty, more: true) else { return false }
            try socket.send(MDP.workerHeader, more: true)
            try socket.send(MDP.replyFrame, more: true)
            try socket.send(client, more: true)
            try socket.send(MDP.empty, more: true)
            return try socket.send(body.isEmpty ? [MDP.empty] : body)
        }
    }

    private func send(now: MonotonicTime, _ write: (ZMQSocket) throws(ZMQError) -> Bool) -> Bool {
        guard let socket else { return false }
        do {
            guard try write(socket) else { return false }
            nextHeartbeat = now.adding(nanoseconds: heartbeatNanoseconds)
            return true
        } catch {
            logger.warning("worker send failed", metadata: ["flowbus.service": "\(service)", "flowbus.error": "\(error)"])
            return false
        }
    }

    /// Makes `receive` return (nil) as soon as `wake` is signalled: how a worker that handles
    /// requests on other threads learns that replies are ready to send.
    public func watch(_ wake: WakeSignal) {
        self.wake = wake
        wakeIndex = socket == nil ? nil : poller.add(fileDescriptor: wake.fileDescriptor)
    }

    /// Sends the REPLY for `request` to the broker.
    public func reply(to request: MajordomoRequest, body: [Frame]) {
        holding = max(0, holding - 1)
        if sendReply(client: request.client, body: body, now: .now()) {
            replies += 1
        } else {
            logger.warning("worker could not send a reply; the client will retry", metadata: ["flowbus.service": "\(service)"])
        }
    }

    /// Sends the REPLY for `request` from another thread, at once, if the serving thread is
    /// asleep in `receive` (it holds `waitGate` at every other moment): the reply does not wait
    /// for the serving thread to wake and send it. Returns nil when it could not be sent so (no
    /// gate, or the serving thread is awake): hand the reply to the serving thread then, as
    /// without a gate. Otherwise returns whether the serving thread must be woken all the same:
    /// sending took in the socket's pending commands, and a request that came meanwhile no longer
    /// wakes the serving thread's poll.
    public func replyWhileWaiting(to request: MajordomoRequest, body: [Frame]) -> Bool? {
        guard let waitGate, waitGate.tryLock() else { return nil }
        defer { waitGate.unlock() }
        reply(to: request, body: body)
        guard let socket else { return false }
        return (try? socket.hasMessage()) ?? true
    }

    /// Sends DISCONNECT and closes the socket. The worker reconnects if `receive` is called again.
    public func disconnect() {
        if socket != nil {
            send(MDPCommand.disconnect.frames, now: .now())
            // Give the DISCONNECT a moment to leave before the socket (linger 0) closes.
            if let socket { try? socket.setLinger(.milliseconds(100)) }
        }
        socket = nil
        poller = ZMQPoller()
        wakeIndex = nil
        reconnectAt = .now()
    }

    /// Serves requests until `stop` returns true (checked at least every 100 ms), then disconnects.
    /// The handler runs on this thread while another keeps the heartbeats going, up to
    /// `WorkerConfiguration.busyLimit`.
    public func run(until stop: () -> Bool, handler: (MajordomoRequest) -> [Frame]) throws(MajordomoWorkerError) {
        defer { disconnect() }
        while !stop() {
            // 100 ms in nanoseconds: no `Duration` arithmetic a request.
            guard let request = try receive(deadline: MonotonicTime.now().adding(nanoseconds: 100_000_000)) else { continue }
            reply(to: request, body: whileBusy { handler(request) })
        }
    }
}

@available(*, unavailable)
extension MajordomoWorker: Sendable {}
