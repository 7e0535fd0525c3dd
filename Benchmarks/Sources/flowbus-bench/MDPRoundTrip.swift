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
    /// The variants are measured in turn, round after round, so that every ratio compares figures
    /// taken under the same load: a shared machine's load moves within a minute, and one variant
    /// measured whole while the machine was busier used to flip a verdict.
    var rounds: Int { options.quick ? 2 : 5 }
    static let body = [UInt8](repeating: 0x5A, count: 16)

    /// What mdp-rtt measures, in the order of its first round.
    enum Variant: CaseIterable {
        case flowbus, sleeping, spinning, raw, proxied

        var text: String {
            switch self {
            case .flowbus: "Flowbus MDP (broker defaults)"
            case .sleeping: "Flowbus, busy poll off"
            case .spinning: "Flowbus, spinning unbudgeted (busy-poll budget unlimited)"
            case .raw: "raw REQ/REP"
            case .proxied: "raw REQ → zmq_proxy → REP"
            }
        }
    }

    func measure(_ variant: Variant, _ scratch: ScratchDirectory, round: Int, warmup: Int, measured: Int) throws(BenchError) -> Measurement {
        let tag = "-\(round)"
        switch variant {
        case .flowbus:
            return try measureFlowbus(scratch, configuration: options.brokerConfiguration(), label: "mdp-rtt flowbus",
                                      tag: tag, warmup: warmup, measured: measured)
        case .sleeping:
            return try measureFlowbus(scratch, configuration: options.brokerConfiguration(busyPoll: .zero), label: "mdp-rtt flowbus, busy poll off",
                                      tag: tag, warmup: warmup, measured: measured)
        case .spinning:
            return try measureFlowbus(scratch, configuration: options.brokerConfiguration(budget: .infinity), label: "mdp-rtt flowbus, spinning unbudgeted",
                                      tag: tag, warmup: warmup, measured: measured)
        case .raw: return try measureRawDirect(scratch, tag: tag, warmup: warmup, measured: measured)
        case .proxied: return try measureRawProxied(scratch, tag: tag, warmup: warmup, measured: measured)
        }
    }

    func run() throws(BenchError) -> [ResultRow] {
        let scratch = try ScratchDirectory()
        let variants = options.flowbusOnly ? [Variant.flowbus, .sleeping, .spinning] : Variant.allCases
        let (perRound, warmRound) = (measured / rounds, max(200, warmup / rounds))
        progress("mdp-rtt: \(rounds) rounds; in each, every variant in turn (\(variants.count)): \(warmRound) warm-up + \(perRound) measured requests of 16 bytes")
        var parts: [Variant: [Measurement]] = [:]
        for round in 0..<rounds {
            var line: [String] = []
            // Each round starts one variant further on, so none is always first after a pause.
            for offset in variants.indices {
                let variant = variants[(round + offset) % variants.count]
                let part = try measure(variant, scratch, round: round, warmup: warmRound, measured: perRound)
                parts[variant, default: []].append(part)
                line.append("\(variant.text) p50 \(format(part.latency.p50)) µs")
            }
            progress("mdp-rtt: round \(round + 1) of \(rounds): " + line.joined(separator: "; "))
        }
        func whole(_ variant: Variant) -> Measurement {
            let measurement = Measurement.combining(parts[variant] ?? [])
            progress("mdp-rtt: \(variant.text): \(measurement.latency.text), \(measurement.cpuText)")
            return measurement
        }
        let flowbus = whole(.flowbus), sleeping = whole(.sleeping), spinning = whole(.spinning)
        if options.flowbusOnly {
            return [ResultRow("mdp-rtt", "p50", unit: "µs", flowbus: flowbus.latency.p50, note: flowbus.latency.text)]
        }
        let raw = whole(.raw), proxied = whole(.proxied)

        let pass = flowbus.latency.p50 <= 2 * raw.latency.p50
        return [
            ResultRow("mdp-rtt", "p50", unit: "µs", flowbus: flowbus.latency.p50, raw: raw.latency.p50, rawLabel: "REQ/REP",
                      target: "≤ 2× raw p50", verdict: pass ? .pass : .miss,
                      note: "every variant measured in \(rounds) rounds of \(perRound) requests (after \(warmRound) to warm up), one after the other in each round, so each ratio compares figures taken under the same load; the p50 of each round, Flowbus and REQ/REP: "
                        + zip(parts[.flowbus] ?? [], parts[.raw] ?? []).map { "\(format($0.latency.p50))/\(format($1.latency.p50))" }.joined(separator: ", ") + " µs"),
            ResultRow("mdp-rtt", "p99", unit: "µs", flowbus: flowbus.latency.p99, raw: raw.latency.p99, rawLabel: "REQ/REP"),
            ResultRow("mdp-rtt", "p99.9", unit: "µs", flowbus: flowbus.latency.p999, raw: raw.latency.p999, rawLabel: "REQ/REP"),
            ResultRow("mdp-rtt", "mean", unit: "µs", flowbus: flowbus.latency.mean, raw: raw.latency.mean, rawLabel: "REQ/REP"),
            ResultRow("mdp-rtt", "CPU per request", unit: "µs", flowbus: flowbus.cpu, raw: raw.cpu, rawLabel: "REQ/REP",
                      note: "CPU per request: user + system time of every thread of the process (client, broker, worker, libzmq I/O) over the measured requests"),
            ResultRow("mdp-rtt", "p50 vs 2 hops", unit: "µs", flowbus: flowbus.latency.p50, raw: proxied.latency.p50, rawLabel: "REQ→proxy→REP",
                      note: "context, no target: raw REQ → ROUTER/DEALER zmq_proxy → REP has the same two hops as MDP's broker; its p99 \(format(proxied.latency.p99)) µs, CPU \(format(proxied.cpu)) µs/request"),
            ResultRow("mdp-rtt", "CPU per request vs 2 hops", unit: "µs", flowbus: flowbus.cpu, raw: proxied.cpu, rawLabel: "REQ→proxy→REP",
                      target: "≤ 1.3× raw 2 hops", verdict: flowbus.cpu <= 1.3 * proxied.cpu ? .pass : .miss,
                      note: "issue 16: Flowbus's CPU per request (broker defaults) against raw libzmq doing the same two hops each way, in this run. Flowbus: \(flowbus.cpuText); raw two hops: \(proxied.cpuText)"),
            ResultRow("mdp-rtt", "p50, broker busy poll off", unit: "µs", flowbus: sleeping.latency.p50, raw: raw.latency.p50, rawLabel: "REQ/REP",
                      target: "≤ 2× raw p50", verdict: sleeping.latency.p50 <= 2 * raw.latency.p50 ? .pass : .miss,
                      note: "issue 16's target, the same with BrokerConfiguration.busyPoll = 0 (the broker sleeps in its poll as soon as it is idle): p99 \(format(sleeping.latency.p99)) µs, CPU \(format(sleeping.cpu)) µs/request; the default polls for \(format(options.brokerConfiguration().busyPoll / .microseconds(1))) µs after traffic"),
            ResultRow("mdp-rtt", "p50, spinning unbudgeted", unit: "µs", flowbus: spinning.latency.p50, raw: raw.latency.p50, rawLabel: "REQ/REP",
                      note: "context: BrokerConfiguration.busyPollBudget = .infinity, the broker spinning after every burst whatever the spins cost while one in eight catches (before 2026-11-28 the default); \(spinning.cpuText), \(format(spinning.cpu / max(proxied.cpu, 0.001), decimals: 2))× raw two hops' CPU"),
        ]
    }

    struct Measurement: Sendable {
        /// Every round trip, ns.
        var samples: [UInt64]
        var latency: LatencySummary
        /// CPU per request, all threads, split into user and system time, with the threads' sleeps.
        var split: ProcessCPU.Split
        /// The broker's busy polls over the measured requests (nil without a broker).
        var spins: BrokerSpins?

        /// CPU µs per request, all threads.
        var cpu: Double { split.microseconds }

        init(samples: [UInt64], split: ProcessCPU.Split, spins: BrokerSpins? = nil) {
            self.samples = samples
            self.latency = LatencySummary(nanoseconds: samples)
            self.split = split
            self.spins = spins
        }

        /// The rounds of one variant as one measurement: every sample, the CPU per request over
        /// all of them, the spins added up.
        static func combining(_ parts: [Measurement]) -> Measurement {
            let samples = parts.flatMap(\.samples)
            let count = Double(max(1, samples.count))
            func perRequest(_ value: (ProcessCPU.Split) -> Double) -> Double {
                parts.reduce(0) { $0 + value($1.split) * Double($1.samples.count) } / count
            }
            let split = ProcessCPU.Split(microseconds: perRequest(\.microseconds), userMicroseconds: perRequest(\.userMicroseconds),
                                         sleeps: perRequest(\.sleeps))
            let spins = parts.compactMap(\.spins)
            return Measurement(samples: samples.isEmpty ? [0] : samples, split: split, spins: spins.isEmpty ? nil : spins.dropFirst().reduce(spins[0], +))
        }

        /// CPU per request, split, with the broker's spins where there is a broker.
        var cpuText: String { split.text + " per request" + (spins.map { "; " + $0.text } ?? "") }
    }

    /// Also used by the `grpc` benchmark for its Flowbus side (`warmup` and `measured` nil: this
    /// benchmark's whole counts). `label` names the measured phase for `Benchmarks/scripts/instructions`;
    /// `tag` makes the endpoint's name unique.
    func measureFlowbus(
        _ scratch: ScratchDirectory, configuration: BrokerConfiguration, label: String, tag: String = "",
        warmup: Int? = nil, measured: Int? = nil
    ) throws(BenchError) -> Measurement {
        let context: ZMQContext
        do { context = try ZMQContext() } catch { throw BenchError("zmq context: \(error)") }
        let endpoint = scratch.endpoint((configuration.busyPoll == .zero ? "mdp-rtt-sleeping" : "mdp-rtt") + "-\(configuration.busyPollBudget)" + tag)
        let broker: BrokerHandle
        do {
            broker = try MajordomoBroker.start(context: context, configuration: configuration, endpoints: [endpoint], logger: logger)
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
        let (warmup, measured) = (warmup ?? self.warmup, measured ?? self.measured)
        let client = Party<Measurement>("mdp-client") { () throws(BenchError) -> Measurement in
            do {
                let client = try MajordomoClient(context: context, endpoint: endpoint, logger: logger)
                let body = [Self.body]
                for _ in 0..<warmup {
                    _ = try client.request(service: "bench.echo", body: body)
                }
                var samples = [UInt64](repeating: 0, count: measured)
                let before = broker.statistics
                Instructions.start()
                let cpu = ProcessCPU.now()
                for index in 0..<measured {
                    let start = monotonicNanoseconds()
                    let reply = try client.request(service: "bench.echo", body: body)
                    samples[index] = monotonicNanoseconds() - start
                    guard reply.count == 1, reply[0].count == 16 else {
                        throw BenchError("unexpected reply: \(reply.count) frames")
                    }
                }
                let spent = ProcessCPU.split(since: cpu, operations: measured)
                Instructions.stop(label, operations: measured)
                return Measurement(samples: samples, split: spent, spins: BrokerSpins(from: before, to: broker.statistics))
            } catch let error as BenchError {
                throw error
            } catch {
                throw BenchError("client: \(error)")
            }
        }
        let measurement: Measurement
        do {
            measurement = try client.join()
        } catch {
            stop.raise()
            _ = try? worker.join()
            throw error
        }
        stop.raise()
        try worker.join()
        return measurement
    }

    private func measureRawDirect(_ scratch: ScratchDirectory, tag: String, warmup: Int, measured: Int) throws(BenchError) -> Measurement {
        let context = RawContext()
        let endpoint = scratch.endpoint("raw-rtt" + tag)
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
        return try rawRequests(context: context, endpoint: endpoint, label: "mdp-rtt raw REQ/REP", warmup: warmup, measured: measured)
    }

    private func measureRawProxied(_ scratch: ScratchDirectory, tag: String, warmup: Int, measured: Int) throws(BenchError) -> Measurement {
        let context = RawContext()
        let front = scratch.endpoint("raw-front" + tag), back = scratch.endpoint("raw-back" + tag)
        let proxy = try RawProxy(context: context, front: front, back: back, control: "inproc://rtt-steer" + tag)
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
        return try rawRequests(context: context, endpoint: front, label: "mdp-rtt raw REQ -> proxy -> REP", warmup: warmup, measured: measured)
    }

    /// A REQ client on its own thread: warm-up, then one timed round trip per request.
    private func rawRequests(context: RawContext, endpoint: String, label: String, warmup: Int, measured: Int) throws(BenchError) -> Measurement {
        let client = Party<Measurement>("raw-req") { () throws(BenchError) -> Measurement in
            let socket = try RawSocket(context, ZMQ_REQ)
            socket.set(ZMQ_RCVTIMEO, 5_000)
            try socket.connect(endpoint)
            var samples = [UInt64](repeating: 0, count: measured)
            var reply = zmq_msg_t()
            zmq_msg_init(&reply)
            defer { zmq_msg_close(&reply) }
            let body = Self.body
            var cpu = ProcessCPU.now()
            for index in 0..<(warmup + measured) {
                if index == warmup {
                    Instructions.start()
                    cpu = ProcessCPU.now()
                }
                let start = monotonicNanoseconds()
                try socket.send(body)
                guard try socket.receive(&reply) else { throw BenchError("raw REP did not answer within 5 s") }
                if index >= warmup { samples[index - warmup] = monotonicNanoseconds() - start }
                guard zmq_msg_size(&reply) == 16 else { throw BenchError("raw reply of \(zmq_msg_size(&reply)) bytes") }
            }
            let spent = ProcessCPU.split(since: cpu, operations: measured)
            Instructions.stop(label, operations: measured)
            return Measurement(samples: samples, split: spent)
        }
        return try client.join()
    }
}
