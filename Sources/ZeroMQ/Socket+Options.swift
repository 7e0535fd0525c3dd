import CZeroMQ

extension ZMQSocket {
    func setOption(_ option: Int32, _ value: Int32, _ name: String) throws(ZMQError) {
        var value = value
        guard zmq_setsockopt(handle, option, &value, MemoryLayout<Int32>.size) == 0 else {
            throw ZMQError.last("zmq_setsockopt(\(name))")
        }
    }

    func setOption64(_ option: Int32, _ value: Int64, _ name: String) throws(ZMQError) {
        var value = value
        guard zmq_setsockopt(handle, option, &value, MemoryLayout<Int64>.size) == 0 else {
            throw ZMQError.last("zmq_setsockopt(\(name))")
        }
    }

    func setOption(_ option: Int32, bytes: [UInt8], _ name: String) throws(ZMQError) {
        let result = bytes.withUnsafeBytes { zmq_setsockopt(handle, option, $0.baseAddress, $0.count) }
        guard result == 0 else { throw ZMQError.last("zmq_setsockopt(\(name))") }
    }

    func int32Option(_ option: Int32, _ name: String) throws(ZMQError) -> Int32 {
        var value: Int32 = 0
        var size = MemoryLayout<Int32>.size
        guard zmq_getsockopt(handle, option, &value, &size) == 0 else {
            throw ZMQError.last("zmq_getsockopt(\(name))")
        }
        return value
    }

    func bytesOption(_ option: Int32, _ name: String, capacity: Int = 256) throws(ZMQError) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: capacity)
        var size = capacity
        let result = buffer.withUnsafeMutableBytes { zmq_getsockopt(handle, option, $0.baseAddress, &size) }
        guard result == 0 else { throw ZMQError.last("zmq_getsockopt(\(name))") }
        return Array(buffer.prefix(size))
    }

    /// The descriptor libzmq makes readable when it queues this socket a command (`ZMQ_FD`).
    func mailboxDescriptor() throws(ZMQError) -> Int32 {
        try int32Option(ZMQ_FD, "ZMQ_FD")
    }

    /// What the socket is ready for now (`ZMQ_EVENTS`: `ZMQ_POLLIN`, `ZMQ_POLLOUT`), after
    /// taking in its pending commands; nil when a signal interrupted the call.
    func pendingEvents() throws(ZMQError) -> Int16? {
        var value: Int32 = 0
        var size = MemoryLayout<Int32>.size
        guard zmq_getsockopt(handle, ZMQ_EVENTS, &value, &size) == 0 else {
            let error = ZMQError.last("zmq_getsockopt(ZMQ_EVENTS)")
            if error.code == .interrupted { return nil }
            throw error
        }
        let events = Int16(truncatingIfNeeded: value)
        // The ask took in every pending command: with nothing to read, only a new command can give
        // the socket a message, and that command wakes its descriptor.
        if events & Int16(ZMQ_POLLIN) == 0 { drained = true }
        return events
    }

    private func milliseconds(_ duration: Duration?) -> Int32 {
        guard let duration else { return -1 }
        return Int32(clamping: duration.milliseconds)
    }

    // MARK: Queues and shutdown

    public func setSendHighWaterMark(_ messages: Int) throws(ZMQError) {
        try setOption(ZMQ_SNDHWM, Int32(clamping: messages), "ZMQ_SNDHWM")
    }

    public func setReceiveHighWaterMark(_ messages: Int) throws(ZMQError) {
        try setOption(ZMQ_RCVHWM, Int32(clamping: messages), "ZMQ_RCVHWM")
    }

    public func setLinger(_ linger: Duration?) throws(ZMQError) {
        try setOption(ZMQ_LINGER, milliseconds(linger), "ZMQ_LINGER")
    }

    /// nil waits forever; zero returns at once.
    public func setReceiveTimeout(_ timeout: Duration?) throws(ZMQError) {
        try setOption(ZMQ_RCVTIMEO, milliseconds(timeout), "ZMQ_RCVTIMEO")
    }

    public func setSendTimeout(_ timeout: Duration?) throws(ZMQError) {
        try setOption(ZMQ_SNDTIMEO, milliseconds(timeout), "ZMQ_SNDTIMEO")
    }

    /// Rejects a peer's message larger than this many bytes by dropping its connection
    /// (libzmq's hard cap; nil means no limit).
    public func setMaximumMessageSize(_ bytes: Int?) throws(ZMQError) {
        try setOption64(ZMQ_MAXMSGSIZE, Int64(bytes ?? -1), "ZMQ_MAXMSGSIZE")
    }

    /// Queue messages only to completed connections.
    public func setImmediate(_ on: Bool) throws(ZMQError) {
        try setOption(ZMQ_IMMEDIATE, Int32(on ? 1 : 0), "ZMQ_IMMEDIATE")
    }

    // MARK: Identity and routing

    public func setRoutingID(_ id: [UInt8]) throws(ZMQError) {
        try setOption(ZMQ_ROUTING_ID, bytes: id, "ZMQ_ROUTING_ID")
    }

    public func routingID() throws(ZMQError) -> [UInt8] {
        try bytesOption(ZMQ_ROUTING_ID, "ZMQ_ROUTING_ID")
    }

    /// A ROUTER reports EHOSTUNREACH for an unknown peer (and EAGAIN at its high-water mark)
    /// instead of dropping the message silently.
    public func setRouterMandatory(_ on: Bool) throws(ZMQError) {
        try setOption(ZMQ_ROUTER_MANDATORY, Int32(on ? 1 : 0), "ZMQ_ROUTER_MANDATORY")
    }

    /// A reconnecting peer with the same routing id takes over the old connection.
    public func setRouterHandover(_ on: Bool) throws(ZMQError) {
        try setOption(ZMQ_ROUTER_HANDOVER, Int32(on ? 1 : 0), "ZMQ_ROUTER_HANDOVER")
    }

    // MARK: Publish and subscribe

    public func subscribe(_ prefix: [UInt8]) throws(ZMQError) {
        try setOption(ZMQ_SUBSCRIBE, bytes: prefix, "ZMQ_SUBSCRIBE")
    }

    public func subscribe(_ prefix: String) throws(ZMQError) {
        try subscribe(Array(prefix.utf8))
    }

    public func unsubscribe(_ prefix: String) throws(ZMQError) {
        try unsubscribe(Array(prefix.utf8))
    }

    public func unsubscribe(_ prefix: [UInt8]) throws(ZMQError) {
        try setOption(ZMQ_UNSUBSCRIBE, bytes: prefix, "ZMQ_UNSUBSCRIBE")
    }

    /// An XPUB passes every subscription up and applies none by itself: `subscribe` and
    /// `unsubscribe` on it then act for the peer whose subscription message was read last.
    public func setXPubManual(_ on: Bool) throws(ZMQError) {
        try setOption(ZMQ_XPUB_MANUAL, Int32(on ? 1 : 0), "ZMQ_XPUB_MANUAL")
    }

    /// Sends `name: value` (name starting `X-`) in the ZMTP handshake of every connection this
    /// socket makes from now on; the peer reads it on each message with `readProperty`. Set it
    /// before `connect`. (ZMQ_METADATA, 95: in libzmq 4.3's draft section of zmq.h, yet honoured by
    /// its stable builds.)
    public func setMetadata(name: String, value: String) throws(ZMQError) {
        try setOption(95, bytes: Array("\(name):\(value)".utf8), "ZMQ_METADATA")
    }

    /// An XPUB blocks (or returns EAGAIN) at its high-water mark instead of dropping.
    public func setXPubNoDrop(_ on: Bool) throws(ZMQError) {
        try setOption(ZMQ_XPUB_NODROP, Int32(on ? 1 : 0), "ZMQ_XPUB_NODROP")
    }

    /// An XPUB passes every subscription up, not only new ones.
    public func setXPubVerbose(_ on: Bool) throws(ZMQError) {
        try setOption(ZMQ_XPUB_VERBOSE, Int32(on ? 1 : 0), "ZMQ_XPUB_VERBOSE")
    }

    /// An XPUB passes every unsubscription up, also a subscriber's leaving, not only the last of
    /// each prefix (with `setXPubVerbose`).
    public func setXPubVerboseUnsubscribe(_ on: Bool) throws(ZMQError) {
        try setOption(ZMQ_XPUB_VERBOSER, Int32(on ? 1 : 0), "ZMQ_XPUB_VERBOSER")
    }

    /// Keep only the last message in the queues.
    public func setConflate(_ on: Bool) throws(ZMQError) {
        try setOption(ZMQ_CONFLATE, Int32(on ? 1 : 0), "ZMQ_CONFLATE")
    }

    // MARK: Reconnection and transport heartbeats

    public func setReconnectInterval(_ interval: Duration) throws(ZMQError) {
        try setOption(ZMQ_RECONNECT_IVL, milliseconds(interval), "ZMQ_RECONNECT_IVL")
    }

    public func setReconnectIntervalMax(_ interval: Duration) throws(ZMQError) {
        try setOption(ZMQ_RECONNECT_IVL_MAX, milliseconds(interval), "ZMQ_RECONNECT_IVL_MAX")
    }

    /// ZMTP heartbeats: they see the transport only; liveness of the peer's code is the
    /// application's job (MDP heartbeats, CHP HUGZ).
    public func setTransportHeartbeat(interval: Duration, timeout: Duration, ttl: Duration) throws(ZMQError) {
        try setOption(ZMQ_HEARTBEAT_IVL, milliseconds(interval), "ZMQ_HEARTBEAT_IVL")
        try setOption(ZMQ_HEARTBEAT_TIMEOUT, milliseconds(timeout), "ZMQ_HEARTBEAT_TIMEOUT")
        try setOption(ZMQ_HEARTBEAT_TTL, milliseconds(ttl), "ZMQ_HEARTBEAT_TTL")
    }

    // MARK: Security

    /// Makes this socket the CURVE server side, with its secret key.
    public func makeCurveServer(secretKey: CurveKey) throws(ZMQError) {
        try setOption(ZMQ_CURVE_SERVER, Int32(1), "ZMQ_CURVE_SERVER")
        try setOption(ZMQ_CURVE_SECRETKEY, bytes: secretKey.bytes, "ZMQ_CURVE_SECRETKEY")
    }

    /// Turns CURVE's server side on or off for the binds that follow (a bind keeps the options it
    /// was made with): with its secret key set, a socket can serve CURVE on tcp and plain on ipc.
    public func setCurveServer(_ on: Bool) throws(ZMQError) {
        try setOption(ZMQ_CURVE_SERVER, Int32(on ? 1 : 0), "ZMQ_CURVE_SERVER")
    }

    /// Before binding `endpoint`: CURVE's server side on for tcp, off for ipc (an ipc endpoint is
    /// reached only through the file system, where its directory's owner decides who connects).
    public func setCurveServer(forBinding endpoint: String) throws(ZMQError) {
        try setCurveServer(!endpoint.hasPrefix("ipc://"))
    }

    /// Makes this socket a CURVE client of the server whose public key is given.
    public func makeCurveClient(serverKey: CurveKey, keyPair: CurveKeyPair) throws(ZMQError) {
        try setOption(ZMQ_CURVE_SERVERKEY, bytes: serverKey.bytes, "ZMQ_CURVE_SERVERKEY")
        try setOption(ZMQ_CURVE_PUBLICKEY, bytes: keyPair.publicKey.bytes, "ZMQ_CURVE_PUBLICKEY")
        try setOption(ZMQ_CURVE_SECRETKEY, bytes: keyPair.secretKey.bytes, "ZMQ_CURVE_SECRETKEY")
    }

    /// The ZAP domain this socket's connections are authenticated in.
    public func setZAPDomain(_ domain: String) throws(ZMQError) {
        try setOption(ZMQ_ZAP_DOMAIN, bytes: Array(domain.utf8), "ZMQ_ZAP_DOMAIN")
    }

    // MARK: State

    /// The endpoint the socket last bound, with a wildcard port resolved (`tcp://127.0.0.1:*`).
    public func lastEndpoint() throws(ZMQError) -> String {
        let bytes = try bytesOption(ZMQ_LAST_ENDPOINT, "ZMQ_LAST_ENDPOINT")
        return String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
    }

    /// Whether a message can be received now without blocking.
    public func hasIncoming() throws(ZMQError) -> Bool {
        try int32Option(ZMQ_EVENTS, "ZMQ_EVENTS") & Int32(ZMQ_POLLIN) != 0
    }
}
