import CRawZMQ
import Glibc
import Synchronization

/// The raw baseline of clone-rate: one XPUB (PUB semantics, but NODROP so nothing is lost and
/// VERBOSE so every subscription is seen) sends N five-frame messages shaped like a KVPUB
/// (key, 8-byte sequence, 16-byte UUID, empty properties, 64-byte value) to K SUB sockets.
enum RawPubSub {
    /// Messages per second each subscriber received (N over the time the slowest took). With
    /// `forwarder`, the messages go through an XSUB → XPUB zmq_proxy first: two hops, as a Clone
    /// update goes writer → server → subscriber.
    static func rate(subscribers: Int, messages: Int, forwarder: Bool = false) throws(BenchError) -> MDPThroughput.Rate {
        let scratch = try ScratchDirectory()
        let context = RawContext()
        let publisherEndpoint = scratch.endpoint("raw-pub")
        let publisher = try RawSocket(context, ZMQ_XPUB)
        publisher.set(ZMQ_SNDHWM, 100_000)
        publisher.set(ZMQ_XPUB_NODROP, 1)
        publisher.set(ZMQ_XPUB_VERBOSE, 1)
        try publisher.bind(publisherEndpoint)
        let endpoint = forwarder ? scratch.endpoint("raw-fwd") : publisherEndpoint
        let proxy = forwarder
            ? try RawProxy(context: context, front: publisherEndpoint, back: endpoint, control: "inproc://fwd-steer",
                           kinds: (ZMQ_XSUB, ZMQ_XPUB), connectFront: true)
            : nil
        defer { try? proxy?.stop() }
        let readers = (0..<subscribers).map { index in
            Party<UInt64>("raw-sub-\(index)") { () throws(BenchError) -> UInt64 in
                let socket = try RawSocket(context, ZMQ_SUB)
                socket.set(ZMQ_RCVHWM, 100_000)
                socket.set(ZMQ_RCVTIMEO, 10_000)
                socket.subscribe("/bench/")
                try socket.connect(endpoint)
                var count = 0
                while count < messages {
                    let frames = try socket.drainMessage()
                    guard frames > 0 else { throw BenchError("raw SUB \(index) got \(count) of \(messages), then nothing for 10 s") }
                    if frames == 5 { count += 1 }
                }
                return monotonicNanoseconds()
            }
        }
        // Every subscription must have reached the publisher before the first message (slow joiner).
        publisher.set(ZMQ_RCVTIMEO, 10_000)
        for _ in 0..<subscribers {
            guard try publisher.drainMessage() > 0 else { throw BenchError("raw SUBs did not subscribe within 10 s") }
        }
        Instructions.start()
        let (start, cpu) = (monotonicNanoseconds(), ProcessCPU.now())
        try publish(publisher, messages: messages)
        var slowest: UInt64 = 0
        for reader in readers { slowest = max(slowest, try reader.join()) }
        let rate = MDPThroughput.Rate(perSecond: Double(messages) / (Double(slowest - start) / 1e9),
                                      cpu: ProcessCPU.microseconds(since: cpu, operations: messages))
        Instructions.stop("clone-rate raw \(forwarder ? "PUB -> proxy -> SUB" : "PUB -> SUB"), \(subscribers) subscriber(s)", operations: messages)
        return rate
    }

    private static func publish(_ publisher: RawSocket, messages: Int) throws(BenchError) {
        let keys = CloneRate.keys.map { Array($0.utf8) }
        let uuid = [UInt8](repeating: 0xAB, count: 16)
        let value = CloneRate.value
        let empty: [UInt8] = []
        var sequence: UInt64 = 0
        for index in 0..<messages {
            sequence += 1
            // NODROP: a full subscriber queue says EAGAIN on the first frame; wait and retry.
            while try !publisher.send(keys[index % keys.count], flags: ZMQ_SNDMORE | ZMQ_DONTWAIT) { sched_yield() }
            try publisher.send(bigEndian: sequence, flags: ZMQ_SNDMORE)
            try publisher.send(uuid, flags: ZMQ_SNDMORE)
            try publisher.send(empty, flags: ZMQ_SNDMORE)
            try publisher.send(value)
        }
    }
}

/// A raw SUB socket on the Clone server's publisher that decodes just enough of each KVPUB
/// (five frames, key prefix, 8-byte sequence) to count updates and notice sequence gaps.
final class RawKVPubSubscriber: UpdateCounter {
    /// What the subscriber thread tells the benchmark.
    private final class Progress: Sendable {
        let counted = Atomic<Int>(0)
        let gaps = Atomic<Int>(0)
        let ready = Atomic<Bool>(false)
        let stop = StopFlag()
    }

    private let shared = Progress()
    private let party: Party<Void>

    init(context: RawContext, publisher endpoint: String, prefix: String, name: String) throws(BenchError) {
        let shared = self.shared
        party = Party(name) { () throws(BenchError) in
            let socket = try RawSocket(context, ZMQ_SUB)
            socket.set(ZMQ_RCVHWM, 500_000)
            socket.set(ZMQ_RCVTIMEO, 100)
            socket.subscribe(prefix)
            // The server answers each new subscription with a HUGZ: proof that ours arrived.
            socket.subscribe("HUGZ")
            try socket.connect(endpoint)
            var frame = zmq_msg_t()
            zmq_msg_init(&frame)
            defer { zmq_msg_close(&frame) }
            var lastSequence: UInt64 = 0
            var local = 0
            let prefixBytes = Array(prefix.utf8)
            while !shared.stop.isRaised {
                guard try socket.receive(&frame) else {
                    shared.counted.store(local, ordering: .releasing)
                    continue
                }
                var index = 0
                var isUpdate = false
                var sequence: UInt64 = 0
                while true {
                    let size = zmq_msg_size(&frame)
                    let data = zmq_msg_data(&frame)!
                    if index == 0 {
                        isUpdate = size >= prefixBytes.count
                            && memcmp(data, prefixBytes, prefixBytes.count) == 0
                        if !isUpdate { shared.ready.store(true, ordering: .releasing) }
                    } else if index == 1 && size == 8 {
                        sequence = UInt64(bigEndian: data.loadUnaligned(as: UInt64.self))
                    }
                    index += 1
                    guard zmq_msg_more(&frame) != 0 else { break }
                    _ = try socket.receive(&frame)
                }
                if isUpdate && index == 5 {
                    if lastSequence != 0 && sequence != lastSequence + 1 { shared.gaps.add(1, ordering: .relaxed) }
                    lastSequence = sequence
                    local += 1
                    shared.counted.store(local, ordering: .releasing)
                }
            }
        }
    }

    var isReady: Bool { shared.ready.load(ordering: .acquiring) }
    var received: Int { shared.counted.load(ordering: .acquiring) }
    var gaps: Int { shared.gaps.load(ordering: .relaxed) }

    func stop() {
        shared.stop.raise()
        _ = try? party.join()
    }
}
