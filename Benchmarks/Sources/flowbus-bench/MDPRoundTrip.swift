import CRawZMQ
import Logging
import Majordomo
import ZeroMQ

/// `mdp-rtt`: sequential request/reply latency, client → broker → worker → broker → client,
/// against raw REQ/REP (one hop each way) and, for context, raw REQ → zmq_proxy → REP (two hops).
struct MDPRoundTrip {
    let options: Options
    let logger: Logger

    var warmup: Int { options.quick ? 500 : 5_000 }
    var measured: Int { options.quick ? 2_000 : 20_000 }
    static let body = [UInt8](repeating: 0x5A, count: 16)

    func run() throws(BenchError) -> [ResultRow] {
        let scratch = try ScratchDirectory()
        progress("mdp-rtt: Flowbus MDP, \(warmup) warm-up + \(measured) measured requests of 16 bytes")
        let flowbus = try measureFlowbus(scratch)
        progress("mdp-rtt: Flowbus \(flowbus.text)")
        progress("mdp-rtt: raw libzmq REQ/REP")
        let raw = try measureRawDirect(scratch)
        progress("mdp-rtt: raw REQ/REP \(raw.text)")
        progress("mdp-rtt: raw libzmq REQ → zmq_proxy → REP")
        let proxied = try measureRawProxied(scratch)
        progress("mdp-rtt: raw via proxy \(proxied.text)")

        let pass = flowbus.p50 <= 2 * raw.p50
        return [
            ResultRow("mdp-rtt", "p50", unit: "µs", flowbus: flowbus.p50, raw: raw.p50, rawLabel: "REQ/REP",
                      target: "≤ 2× raw p50", verdict: pass ? .pass : .miss),
            ResultRow("mdp-rtt", "p99", unit: "µs", flowbus: flowbus.p99, raw: raw.p99, rawLabel: "REQ/REP"),
            ResultRow("mdp-rtt", "p99.9", unit: "µs", flowbus: flowbus.p999, raw: raw.p999, rawLabel: "REQ/REP"),
            ResultRow("mdp-rtt", "mean", unit: "µs", flowbus: flowbus.mean, raw: raw.mean, rawLabel: "REQ/REP"),
            ResultRow("mdp-rtt", "p50 vs 2 hops", unit: "µs", flowbus: flowbus.p50, raw: proxied.p50, rawLabel: "REQ→proxy→REP",
                      note: "context, no target: raw REQ → ROUTER/DEALER zmq_proxy → REP has the same two hops as MDP's broker; p99 \(format(proxied.p99)) µs"),
        ]
    }

    private func measureFlowbus(_ scratch: ScratchDirectory) throws(BenchError) -> LatencySummary {
        let context: ZMQContext
        do { context = try ZMQContext() } catch { throw BenchError("zmq context: \(error)") }
        let endpoint = scratch.endpoint("mdp-rtt")
        let broker: BrokerHandle
        do {
            broker = try MajordomoBroker.start(context: context, endpoints: [endpoint], logger: logger)
        } catch {
            throw BenchError("the broker did not start: \(error)")
        }
        defer { broker.stop() }
        let stop = StopFlag()
        let logger = self.logger
        let worker = Party<Void>("mdp-worker") { () throws(BenchError) in
            do {
                let worker = try MajordomoWorker(context: context, endpoint: endpoint, service: "bench.echo", logger: logger)
                try worker.run(until: { stop.isRaised }, handler: { $0.body })
            } catch {
                throw BenchError("worker: \(error)")
            }
        }
        let (warmup, measured) = (self.warmup, self.measured)
        let client = Party<[UInt64]>("mdp-client") { () throws(BenchError) -> [UInt64] in
            do {
                let client = try MajordomoClient(context: context, endpoint: endpoint, logger: logger)
                let body = [Self.body]
                for _ in 0..<warmup {
                    _ = try client.request(service: "bench.echo", body: body)
                }
                var samples = [UInt64](repeating: 0, count: measured)
                for index in 0..<measured {
                    let start = monotonicNanoseconds()
                    let reply = try client.request(service: "bench.echo", body: body)
                    samples[index] = monotonicNanoseconds() - start
                    guard reply.count == 1, reply[0].count == 16 else {
                        throw BenchError("unexpected reply: \(reply.count) frames")
                    }
                }
                return samples
            } catch let error as BenchError {
                throw error
            } catch {
                throw BenchError("client: \(error)")
            }
        }
        let samples: [UInt64]
        do {
            samples = try client.join()
        } catch {
            stop.raise()
            _ = try? worker.join()
            throw error
        }
        stop.raise()
        try worker.join()
        return LatencySummary(nanoseconds: samples)
    }

    private func measureRawDirect(_ scratch: ScratchDirectory) throws(BenchError) -> LatencySummary {
        let context = RawContext()
        let endpoint = scratch.endpoint("raw-rtt")
        let stop = StopFlag()
        let bound = Gate()
        let server = Party<Void>("raw-rep") { () throws(BenchError) in
            let socket = try RawSocket(context, ZMQ_REP)
            do throws(BenchError) { try socket.bind(endpoint) } catch { bound.open(); throw error }
            bound.open()
            try rawEcho(socket, until: stop)
        }
        bound.wait()
        defer { stop.raise(); _ = try? server.join() }
        return try rawRequests(context: context, endpoint: endpoint)
    }

    private func measureRawProxied(_ scratch: ScratchDirectory) throws(BenchError) -> LatencySummary {
        let context = RawContext()
        let front = scratch.endpoint("raw-front"), back = scratch.endpoint("raw-back")
        let proxy = try RawProxy(context: context, front: front, back: back, control: "inproc://rtt-steer")
        let stop = StopFlag()
        let server = Party<Void>("raw-rep") { () throws(BenchError) in
            let socket = try RawSocket(context, ZMQ_REP)
            try socket.connect(back)
            try rawEcho(socket, until: stop)
        }
        defer {
            stop.raise()
            _ = try? server.join()
            try? proxy.stop()
        }
        return try rawRequests(context: context, endpoint: front)
    }

    /// A REQ client on its own thread: warm-up, then one timed round trip per request.
    private func rawRequests(context: RawContext, endpoint: String) throws(BenchError) -> LatencySummary {
        let (warmup, measured) = (self.warmup, self.measured)
        let client = Party<[UInt64]>("raw-req") { () throws(BenchError) -> [UInt64] in
            let socket = try RawSocket(context, ZMQ_REQ)
            socket.set(ZMQ_RCVTIMEO, 5_000)
            try socket.connect(endpoint)
            var samples = [UInt64](repeating: 0, count: measured)
            var reply = zmq_msg_t()
            zmq_msg_init(&reply)
            defer { zmq_msg_close(&reply) }
            let body = Self.body
            for index in 0..<(warmup + measured) {
                let start = monotonicNanoseconds()
                try socket.send(body)
                guard try socket.receive(&reply) else { throw BenchError("raw REP did not answer within 5 s") }
                if index >= warmup { samples[index - warmup] = monotonicNanoseconds() - start }
                guard zmq_msg_size(&reply) == 16 else { throw BenchError("raw reply of \(zmq_msg_size(&reply)) bytes") }
            }
            return samples
        }
        return LatencySummary(nanoseconds: try client.join())
    }
}
