import CRawZMQ
import Glibc

// The baselines talk to libzmq's C API directly, the way a C program would, so the ratio
// measures what Flowbus's Swift layers add and not a second Swift binding.

/// A libzmq context. `@unchecked Sendable` is true: libzmq documents contexts as thread-safe
/// (sockets are not, and `RawSocket` is not Sendable).
final class RawContext: @unchecked Sendable {
    let handle: UnsafeMutableRawPointer

    init(maxSockets: Int32? = nil) {
        handle = zmq_ctx_new()
        if let maxSockets { zmq_ctx_set(handle, ZMQ_MAX_SOCKETS, maxSockets) }
    }

    deinit {
        while zmq_ctx_term(handle) != 0 && zmq_errno() == EINTR {}
    }

    static var version: String {
        var major: Int32 = 0, minor: Int32 = 0, patch: Int32 = 0
        zmq_version(&major, &minor, &patch)
        return "\(major).\(minor).\(patch)"
    }
}

/// One libzmq socket, owned by the thread that made it.
final class RawSocket {
    let handle: UnsafeMutableRawPointer
    let context: RawContext

    init(_ context: RawContext, _ type: Int32) throws(BenchError) {
        guard let handle = zmq_socket(context.handle, type) else { throw Self.error("zmq_socket") }
        self.handle = handle
        self.context = context
        set(ZMQ_LINGER, 0)
    }

    deinit {
        zmq_close(handle)
    }

    func set(_ option: Int32, _ value: Int32) {
        var value = value
        zmq_setsockopt(handle, option, &value, MemoryLayout<Int32>.size)
    }

    /// Queues of 100,000 messages each way: the pipelined baselines keep up to a window of 1,000
    /// requests in flight and must never stop at libzmq's default high-water mark of 1,000.
    func setDeepQueues() {
        set(ZMQ_SNDHWM, 100_000)
        set(ZMQ_RCVHWM, 100_000)
    }

    /// The client of a pipelined baseline: a DEALER with deep queues, waiting at most 5 s for a
    /// reply (`drainMessage` then returns 0, which the caller reports), connected to `endpoint`.
    static func pipelinedClient(_ context: RawContext, connectedTo endpoint: String) throws(BenchError) -> RawSocket {
        let socket = try RawSocket(context, ZMQ_DEALER)
        socket.setDeepQueues()
        socket.set(ZMQ_RCVTIMEO, 5_000)
        try socket.connect(endpoint)
        return socket
    }

    func subscribe(_ prefix: String) {
        let bytes = Array(prefix.utf8)
        bytes.withUnsafeBytes { _ = zmq_setsockopt(handle, ZMQ_SUBSCRIBE, $0.baseAddress, $0.count) }
    }

    func bind(_ endpoint: String) throws(BenchError) {
        guard zmq_bind(handle, endpoint) == 0 else { throw Self.error("zmq_bind(\(endpoint))") }
    }

    func connect(_ endpoint: String) throws(BenchError) {
        guard zmq_connect(handle, endpoint) == 0 else { throw Self.error("zmq_connect(\(endpoint))") }
    }

    /// Copies `bytes` into one frame. False on EAGAIN (with ZMQ_DONTWAIT); throws on anything else.
    @discardableResult
    @inline(__always)
    func send(_ bytes: [UInt8], flags: Int32 = 0) throws(BenchError) -> Bool {
        try Self.outcome(bytes.withUnsafeBytes { Self.send(handle, $0.baseAddress, $0.count, flags) })
    }

    /// Sends `value` as an 8-byte network-order frame (a CHP sequence).
    @discardableResult
    @inline(__always)
    func send(bigEndian value: UInt64, flags: Int32 = 0) throws(BenchError) -> Bool {
        try Self.outcome(withUnsafeBytes(of: value.bigEndian) { Self.send(handle, $0.baseAddress, $0.count, flags) })
    }

    /// zmq_send retried on EINTR; 0 when sent, else the errno.
    @inline(__always)
    static func send(_ handle: UnsafeMutableRawPointer, _ bytes: UnsafeRawPointer?, _ count: Int, _ flags: Int32) -> Int32 {
        while true {
            if zmq_send(handle, bytes, count, flags) >= 0 { return 0 }
            let code = zmq_errno()
            if code != EINTR { return code }
        }
    }

    @inline(__always)
    private static func outcome(_ code: Int32) throws(BenchError) -> Bool {
        if code == 0 { return true }
        if code == EAGAIN { return false }
        throw error("zmq_send", code)
    }

    /// Receives one frame into `message` (initialised by the caller); false on EAGAIN or timeout.
    @inline(__always)
    func receive(_ message: inout zmq_msg_t, flags: Int32 = 0) throws(BenchError) -> Bool {
        while true {
            if zmq_msg_recv(&message, handle, flags) >= 0 { return true }
            let code = zmq_errno()
            if code == EINTR { continue }
            if code == EAGAIN { return false }
            throw Self.error("zmq_msg_recv", code)
        }
    }

    /// Sends `message` on, keeping its more-flag; libzmq takes its content (zero copy).
    @inline(__always)
    func forward(_ message: inout zmq_msg_t, more: Bool) throws(BenchError) {
        while zmq_msg_send(&message, handle, more ? ZMQ_SNDMORE : 0) < 0 {
            let code = zmq_errno()
            if code != EINTR { throw Self.error("zmq_msg_send", code) }
        }
    }

    /// Receives every frame of one message and drops them; returns the frame count (0 on timeout).
    func drainMessage(flags: Int32 = 0) throws(BenchError) -> Int {
        var message = zmq_msg_t()
        zmq_msg_init(&message)
        defer { zmq_msg_close(&message) }
        guard try receive(&message, flags: flags) else { return 0 }
        var frames = 1
        while zmq_msg_more(&message) != 0 {
            _ = try receive(&message)
            frames += 1
        }
        return frames
    }

    static func error(_ operation: String, _ code: Int32 = zmq_errno()) -> BenchError {
        BenchError("\(operation) failed: \(String(cString: zmq_strerror(code))) (errno \(code))")
    }
}

/// Echoes every message it receives, whole (REQ and REP must read a message to its end before
/// they may send), until `stop` is raised (checked every 100 ms). The raw baselines' workers.
func rawEcho(_ socket: RawSocket, until stop: StopFlag) throws(BenchError) {
    socket.set(ZMQ_RCVTIMEO, 100)
    var frames = [zmq_msg_t](repeating: zmq_msg_t(), count: 16)
    for index in frames.indices { zmq_msg_init(&frames[index]) }
    defer { for index in frames.indices { zmq_msg_close(&frames[index]) } }
    while !stop.isRaised {
        guard try socket.receive(&frames[0]) else { continue }
        var count = 1
        while zmq_msg_more(&frames[count - 1]) != 0 {
            guard count < frames.count else { throw BenchError("raw echo: a message of more than \(frames.count) frames") }
            _ = try socket.receive(&frames[count])
            count += 1
        }
        for index in 0..<count {
            try socket.forward(&frames[index], more: index < count - 1)
        }
    }
}

/// A ROUTER front and a DEALER back (or any pair of `kinds`) joined by `zmq_proxy_steerable` on
/// its own thread: the raw stand-in for a broker's extra hop. `stop()` sends TERMINATE on the
/// control socket. With `connectFront` the front connects instead of binding (a forwarder's XSUB).
final class RawProxy: Sendable {
    private let party: Party<Void>
    private let context: RawContext
    private let controlEndpoint: String

    init(
        context: RawContext, front: String, back: String, control: String,
        kinds: (front: Int32, back: Int32) = (ZMQ_ROUTER, ZMQ_DEALER), connectFront: Bool = false
    ) throws(BenchError) {
        self.context = context
        self.controlEndpoint = control
        let ready = Gate()
        party = Party("raw-proxy") { () throws(BenchError) in
            let frontend = try RawSocket(context, kinds.front)
            let backend = try RawSocket(context, kinds.back)
            let steering = try RawSocket(context, ZMQ_PAIR)
            if kinds.back == ZMQ_XPUB {
                // Lossless like the Clone server's publisher, and every subscription passed upstream.
                backend.set(ZMQ_XPUB_NODROP, 1)
                backend.set(ZMQ_XPUB_VERBOSE, 1)
            }
            for socket in [frontend, backend] { socket.setDeepQueues() }
            do throws(BenchError) {
                if connectFront { try frontend.connect(front) } else { try frontend.bind(front) }
                try backend.bind(back)
                try steering.bind(control)
            } catch {
                ready.open()
                throw error
            }
            ready.open()
            zmq_proxy_steerable(frontend.handle, backend.handle, nil, steering.handle)
        }
        ready.wait()
    }

    func stop() throws(BenchError) {
        let steering = try RawSocket(context, ZMQ_PAIR)
        try steering.connect(controlEndpoint)
        try steering.send(Array("TERMINATE".utf8))
        try party.join()
    }
}

extension MDPThroughput {
    /// How a raw baseline's client measures: `send` queues one request while fewer than `window`
    /// wait, `receive` takes one reply (throwing, with `received` of `total`, when none comes);
    /// `warmup` requests untimed, then `measured` timed with the process's CPU. `instructions`
    /// names the timed part for callgrind (`Instructions`), when given.
    static func pipelinedRate(
        window: Int, warmup: Int, measured: Int, instructions label: String? = nil,
        send: () throws(BenchError) -> Void, receive: (_ received: Int, _ total: Int) throws(BenchError) -> Void
    ) throws(BenchError) -> Rate {
        func pump(_ total: Int) throws(BenchError) {
            var sent = 0, received = 0
            while received < total {
                while sent < total && sent - received < window {
                    try send()
                    sent += 1
                }
                try receive(received, total)
                received += 1
            }
        }
        try pump(warmup)
        if label != nil { Instructions.start() }
        let (start, cpu) = (monotonicNanoseconds(), ProcessCPU.now())
        try pump(measured)
        let elapsed = monotonicNanoseconds() - start
        let rate = Rate(perSecond: Double(measured) / (Double(elapsed) / 1e9),
                        cpu: ProcessCPU.microseconds(since: cpu, operations: measured))
        if let label { Instructions.stop(label, operations: measured) }
        return rate
    }
}
