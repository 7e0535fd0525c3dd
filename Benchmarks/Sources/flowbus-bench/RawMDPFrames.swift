import CRawZMQ
import Glibc

/// 7/MDP's frames with nothing else: a broker, workers and a client in libzmq's C API that pass
/// exactly the frames a Flowbus client, broker and worker pass for one request, pipelined with a
/// credit per worker, and do no other work (no heartbeats, no checks, no services table). It
/// tells what the protocol's frames cost in libzmq by themselves, so that the pipelined CPU target
/// (≤ 2× raw DEALER → proxy → DEALER, whose messages are one or two frames) can be read against
/// the floor that 7/MDP's frames set, and Flowbus's own share against that floor.
///
/// - client (DEALER): `"" MDPC01 service body` → the reply `"" MDPC01 service body`;
/// - broker (one ROUTER for clients and workers, like Flowbus's): a request becomes
///   `worker "" MDPW01 0x02 client "" body` for a worker with credit left (round robin), else it
///   waits in a queue; a reply `worker "" MDPW01 0x03 client "" body` goes back as
///   `client "" MDPC01 service body`. Identities and bodies are moved, not copied (`zmq_msg_move`).
/// - worker (DEALER): READY once, then answers each request with its body.
enum RawMDPFrames {
    static let service = Array("bench.echo".utf8)

    static func rate(
        scratch: ScratchDirectory, workers count: Int, credit: Int, window: Int, warmup: Int, measured: Int
    ) throws(BenchError) -> MDPThroughput.Rate {
        let context = RawContext()
        let endpoint = scratch.endpoint("raw-mdp-\(count)-\(credit)")
        let stop = StopFlag()
        let bound = Gate()
        let broker = Party<Void>("raw-mdp-broker") { () throws(BenchError) in
            let socket = try RawSocket(context, ZMQ_ROUTER)
            socket.setDeepQueues()
            socket.set(ZMQ_RCVTIMEO, 100)
            do throws(BenchError) {
                try socket.bind(endpoint)
            } catch {
                bound.open()
                throw error
            }
            bound.open()
            try serve(socket, credit: credit, queueCapacity: window, until: stop)
        }
        bound.wait()
        let workers = (0..<count).map { index in
            Party<Void>("raw-mdp-wk-\(index)") { () throws(BenchError) in
                let socket = try RawSocket(context, ZMQ_DEALER)
                socket.setDeepQueues()
                try socket.connect(endpoint)
                try work(socket, until: stop)
            }
        }
        defer {
            stop.raise()
            for worker in workers { _ = try? worker.join() }
            _ = try? broker.join()
        }
        let client = Party<MDPThroughput.Rate>("raw-mdp-client") { () throws(BenchError) -> MDPThroughput.Rate in
            let socket = try RawSocket.pipelinedClient(context, connectedTo: endpoint)
            let body = MDPRoundTrip.body, header = Array("MDPC01".utf8), empty: [UInt8] = []
            // The workers' READY may still be on its way: the first requests wait in the queue.
            return try MDPThroughput.pipelinedRate(
                window: window, warmup: warmup, measured: measured,
                instructions: "mdp-throughput raw 7/MDP frames, \(count) worker(s), credit \(credit)",
                send: { () throws(BenchError) in
                    try socket.send(empty, flags: ZMQ_SNDMORE)
                    try socket.send(header, flags: ZMQ_SNDMORE)
                    try socket.send(service, flags: ZMQ_SNDMORE)
                    try socket.send(body)
                },
                receive: { (received, total) throws(BenchError) in
                    let frames = try socket.drainMessage()
                    guard frames == 4 else {
                        throw BenchError(frames == 0
                            ? "raw 7/MDP broker: no reply within 5 s after \(received) of \(total)"
                            : "raw 7/MDP broker: a reply of \(frames) frames, not 4")
                    }
                })
        }
        do {
            return try client.join()
        } catch {
            stop.raise()
            if case .failure(let brokerError) = Result(catching: { () throws(BenchError) in try broker.join() }) {
                throw BenchError("\(error); the raw 7/MDP broker failed: \(brokerError)")
            }
            throw error
        }
    }

    /// Receives one whole message into `frames` (at most its count); the number of frames, 0 on timeout.
    private static func receive(_ socket: RawSocket, into frames: UnsafeMutablePointer<zmq_msg_t>, capacity: Int)
        throws(BenchError) -> Int
    {
        guard try socket.receive(&frames[0]) else { return 0 }
        var count = 1
        while zmq_msg_more(&frames[count - 1]) != 0 {
            guard count < capacity else { throw BenchError("raw 7/MDP: a message of more than \(capacity) frames") }
            _ = try socket.receive(&frames[count])
            count += 1
        }
        return count
    }

    private static func byte(_ frame: inout zmq_msg_t, at index: Int) -> UInt8? {
        guard zmq_msg_size(&frame) > index else { return nil }
        return zmq_msg_data(&frame)!.load(fromByteOffset: index, as: UInt8.self)
    }

    /// The broker's loop. Frames are moved from the receiving array to the socket or the queue.
    private static func serve(_ socket: RawSocket, credit: Int, queueCapacity: Int, until stop: StopFlag) throws(BenchError) {
        let capacity = 8
        let frames = UnsafeMutablePointer<zmq_msg_t>.allocate(capacity: capacity)
        // The queue holds each waiting request's client identity and body, two messages a slot.
        let slots = queueCapacity + 1
        let queue = UnsafeMutablePointer<zmq_msg_t>.allocate(capacity: 2 * slots)
        for index in 0..<capacity { zmq_msg_init(&frames[index]) }
        for index in 0..<(2 * slots) { zmq_msg_init(&queue[index]) }
        defer {
            for index in 0..<capacity { zmq_msg_close(&frames[index]) }
            for index in 0..<(2 * slots) { zmq_msg_close(&queue[index]) }
            frames.deallocate()
            queue.deallocate()
        }
        var head = 0, tail = 0
        var workers: [[UInt8]] = [], room: [Int] = []
        var next = 0
        let empty: [UInt8] = [], workerHeader = Array("MDPW01".utf8), clientHeader = Array("MDPC01".utf8)
        let request: [UInt8] = [0x02]

        /// A worker with credit left, round robin; nil when every one is full.
        func pick() -> Int? {
            for offset in 0..<workers.count {
                let index = (next + offset) % workers.count
                if room[index] > 0 {
                    next = (index + 1) % workers.count
                    return index
                }
            }
            return nil
        }
        func dispatch(to worker: Int, client: inout zmq_msg_t, body: inout zmq_msg_t) throws(BenchError) {
            room[worker] -= 1
            try socket.send(workers[worker], flags: ZMQ_SNDMORE)
            try socket.send(empty, flags: ZMQ_SNDMORE)
            try socket.send(workerHeader, flags: ZMQ_SNDMORE)
            try socket.send(request, flags: ZMQ_SNDMORE)
            try socket.forward(&client, more: true)
            try socket.send(empty, flags: ZMQ_SNDMORE)
            try socket.forward(&body, more: false)
        }

        while !stop.isRaised {
            let count = try receive(socket, into: frames, capacity: capacity)
            guard count >= 4 else { continue }
            if byte(&frames[2], at: 3) == UInt8(ascii: "C") {
                // [client, "", MDPC01, service, body]
                guard count == 5 else { throw BenchError("raw 7/MDP broker: a request of \(count) frames, not 5") }
                if let worker = pick() {
                    try dispatch(to: worker, client: &frames[0], body: &frames[4])
                } else {
                    guard (tail + 1) % slots != head else { throw BenchError("raw 7/MDP broker: more than \(queueCapacity) requests waiting") }
                    zmq_msg_move(&queue[2 * tail], &frames[0])
                    zmq_msg_move(&queue[2 * tail + 1], &frames[4])
                    tail = (tail + 1) % slots
                }
                continue
            }
            // [worker, "", MDPW01, command, ...]
            switch byte(&frames[3], at: 0) {
            case 0x01:
                workers.append([UInt8](UnsafeRawBufferPointer(start: zmq_msg_data(&frames[0]), count: zmq_msg_size(&frames[0]))))
                room.append(credit)
            case 0x03:
                // [worker, "", MDPW01, 0x03, client, "", body] → [client, "", MDPC01, service, body]
                guard count == 7 else { throw BenchError("raw 7/MDP broker: a reply of \(count) frames, not 7") }
                try socket.forward(&frames[4], more: true)
                try socket.send(empty, flags: ZMQ_SNDMORE)
                try socket.send(clientHeader, flags: ZMQ_SNDMORE)
                try socket.send(service, flags: ZMQ_SNDMORE)
                try socket.forward(&frames[6], more: false)
                // The worker's identity, compared in place (no array per reply).
                let (identity, size) = (zmq_msg_data(&frames[0])!, zmq_msg_size(&frames[0]))
                guard let index = workers.firstIndex(where: { known in
                    known.count == size && known.withUnsafeBytes { memcmp($0.baseAddress!, identity, size) == 0 }
                }) else { continue }
                room[index] += 1
                while head != tail, let free = pick() {
                    try dispatch(to: free, client: &queue[2 * head], body: &queue[2 * head + 1])
                    head = (head + 1) % slots
                }
            default:
                continue
            }
        }
    }

    /// A worker: READY, then each request's body back as its reply.
    private static func work(_ socket: RawSocket, until stop: StopFlag) throws(BenchError) {
        socket.set(ZMQ_RCVTIMEO, 100)
        let empty: [UInt8] = [], header = Array("MDPW01".utf8)
        try socket.send(empty, flags: ZMQ_SNDMORE)
        try socket.send(header, flags: ZMQ_SNDMORE)
        try socket.send([0x01], flags: ZMQ_SNDMORE)
        try socket.send(service)
        let capacity = 8
        let frames = UnsafeMutablePointer<zmq_msg_t>.allocate(capacity: capacity)
        for index in 0..<capacity { zmq_msg_init(&frames[index]) }
        defer {
            for index in 0..<capacity { zmq_msg_close(&frames[index]) }
            frames.deallocate()
        }
        let reply: [UInt8] = [0x03]
        while !stop.isRaised {
            // ["", MDPW01, 0x02, client, "", body] → ["", MDPW01, 0x03, client, "", body]
            let count = try receive(socket, into: frames, capacity: capacity)
            guard count > 0 else { continue }
            guard count == 6 else { throw BenchError("raw 7/MDP worker: a request of \(count) frames, not 6") }
            try socket.send(empty, flags: ZMQ_SNDMORE)
            try socket.send(header, flags: ZMQ_SNDMORE)
            try socket.send(reply, flags: ZMQ_SNDMORE)
            try socket.forward(&frames[3], more: true)
            try socket.forward(&frames[4], more: true)
            try socket.forward(&frames[5], more: false)
        }
    }
}
