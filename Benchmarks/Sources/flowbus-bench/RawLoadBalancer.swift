import CRawZMQ
import Glibc

/// The raw counterpart of MDP's dispatch rule: a load-balancing broker in libzmq's C API (the
/// zguide's LRU queue) that hands a worker one request at a time and the next only after its
/// reply. It shows what one-request-per-worker costs by itself, without Flowbus's code.
/// Clients are DEALERs sending `"" body`; workers are REQ sockets that say READY once.
enum RawLoadBalancer {
    /// Pipelined requests per second through the broker to `workers` REQ echo workers, and CPU per request.
    static func rate(scratch: ScratchDirectory, workers count: Int, window: Int, warmup: Int, measured: Int)
        throws(BenchError) -> MDPThroughput.Rate
    {
        let context = RawContext()
        let front = scratch.endpoint("lru-front-\(count)"), back = scratch.endpoint("lru-back-\(count)")
        let stop = StopFlag()
        let bound = Gate()
        let broker = Party<Void>("raw-lru") { () throws(BenchError) in
            let frontend = try RawSocket(context, ZMQ_ROUTER)
            let backend = try RawSocket(context, ZMQ_ROUTER)
            for socket in [frontend, backend] { socket.setDeepQueues() }
            do throws(BenchError) {
                try frontend.bind(front)
                try backend.bind(back)
            } catch {
                bound.open()
                throw error
            }
            bound.open()
            try serve(frontend: frontend, backend: backend, until: stop)
        }
        bound.wait()
        let workers = (0..<count).map { index in
            Party<Void>("raw-lru-wk-\(index)") { () throws(BenchError) in
                let socket = try RawSocket(context, ZMQ_REQ)
                try socket.connect(back)
                try socket.send(Array("READY".utf8))
                try rawEcho(socket, until: stop)
            }
        }
        defer {
            stop.raise()
            for worker in workers { _ = try? worker.join() }
            _ = try? broker.join()
        }
        let client = Party<MDPThroughput.Rate>("raw-lru-client") { () throws(BenchError) -> MDPThroughput.Rate in
            let socket = try RawSocket.pipelinedClient(context, connectedTo: front)
            let body = MDPRoundTrip.body
            let empty: [UInt8] = []
            return try MDPThroughput.pipelinedRate(
                window: window, warmup: warmup, measured: measured,
                send: { () throws(BenchError) in
                    try socket.send(empty, flags: ZMQ_SNDMORE)
                    try socket.send(body)
                },
                receive: { (received, total) throws(BenchError) in
                    guard try socket.drainMessage() == 2 else {
                        throw BenchError("raw LRU broker: no reply within 5 s after \(received) of \(total)")
                    }
                })
        }
        do {
            return try client.join()
        } catch {
            stop.raise()
            if case .failure(let brokerError) = Result(catching: { () throws(BenchError) in try broker.join() }) {
                throw BenchError("\(error); the broker failed: \(brokerError)")
            }
            throw error
        }
    }

    /// The broker loop: reads clients only while some worker is idle, like MDP's one-in-flight rule.
    private static func serve(frontend: RawSocket, backend: RawSocket, until stop: StopFlag) throws(BenchError) {
        var idle: [[UInt8]] = []
        var idleHead = 0
        var items = [
            zmq_pollitem_t(socket: backend.handle, fd: 0, events: Int16(ZMQ_POLLIN), revents: 0),
            zmq_pollitem_t(socket: frontend.handle, fd: 0, events: Int16(ZMQ_POLLIN), revents: 0),
        ]
        var frame = zmq_msg_t()
        zmq_msg_init(&frame)
        defer { zmq_msg_close(&frame) }
        while !stop.isRaised {
            let watched: Int32 = idleHead < idle.count ? 2 : 1
            let ready = items.withUnsafeMutableBufferPointer { zmq_poll($0.baseAddress, watched, 100) }
            if ready < 0 {
                if zmq_errno() == EINTR { continue }
                throw RawSocket.error("zmq_poll")
            }
            if items[0].revents & Int16(ZMQ_POLLIN) != 0 {
                // [worker, "", READY] or [worker, "", client, "", body...]
                _ = try backend.receive(&frame)
                let worker = [UInt8](UnsafeRawBufferPointer(start: zmq_msg_data(&frame), count: zmq_msg_size(&frame)))
                _ = try backend.receive(&frame)
                _ = try backend.receive(&frame)
                if zmq_msg_more(&frame) != 0 {
                    while true {
                        let more = zmq_msg_more(&frame) != 0
                        try frontend.forward(&frame, more: more)
                        guard more else { break }
                        _ = try backend.receive(&frame)
                    }
                }
                if idleHead == idle.count {
                    idle.removeAll(keepingCapacity: true)
                    idleHead = 0
                }
                idle.append(worker)
            }
            if watched == 2 && items[1].revents & Int16(ZMQ_POLLIN) != 0 {
                // [client, "", body...] → [worker, "", client, "", body...]
                let worker = idle[idleHead]
                idleHead += 1
                try backend.send(worker, flags: ZMQ_SNDMORE)
                try backend.send([], flags: ZMQ_SNDMORE)
                _ = try frontend.receive(&frame)
                while true {
                    let more = zmq_msg_more(&frame) != 0
                    try backend.forward(&frame, more: more)
                    guard more else { break }
                    _ = try frontend.receive(&frame)
                }
            }
        }
    }
}
