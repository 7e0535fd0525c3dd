import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import Synchronization

/// Nanoseconds on the monotonic clock.
@inline(__always)
func nowNanoseconds() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
}

/// User + system CPU time of the whole process (every thread: client, server, event loops).
struct CPUTime {
    let microseconds: Int

    static func now() -> CPUTime {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        let seconds = Int(usage.ru_utime.tv_sec) + Int(usage.ru_stime.tv_sec)
        return CPUTime(microseconds: seconds * 1_000_000 + Int(usage.ru_utime.tv_usec) + Int(usage.ru_stime.tv_usec))
    }

    /// CPU µs per operation since `self`.
    func perOperation(_ operations: Int) -> Double {
        Double(CPUTime.now().microseconds - microseconds) / Double(max(1, operations))
    }
}

/// Exact percentiles (nearest rank over the sorted samples), in µs.
struct Percentiles {
    let p50: Double, p99: Double, p999: Double, mean: Double, max: Double

    init(nanoseconds samples: [UInt64]) {
        let sorted = samples.sorted()
        func rank(_ fraction: Double) -> Double {
            let index = Swift.max(1, Int((fraction * Double(sorted.count)).rounded(.up))) - 1
            return Double(sorted[index]) / 1000
        }
        p50 = rank(0.50)
        p99 = rank(0.99)
        p999 = rank(0.999)
        mean = Double(sorted.reduce(0, +)) / Double(sorted.count) / 1000
        max = Double(sorted[sorted.count - 1]) / 1000
    }

    var text: String {
        String(format: "p50 %.1f µs, p99 %.1f µs, p99.9 %.1f µs, mean %.1f µs, max %.1f µs", p50, p99, p999, mean, max)
    }
}

struct BaselineFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

typealias EchoClient = GRPCClient<HTTP2ClientTransport.Posix>

/// The four measurements, each against the same client and server.
struct Measurements: Sendable {
    let client: EchoClient
    let settings: Settings
    let payload = [UInt8](repeating: 0x5A, count: 16)

    /// One unary echo; checks the reply is the payload.
    private func call() async throws {
        let reply = try await client.unary(
            request: ClientRequest(message: payload), descriptor: Echo.unary,
            serializer: ByteSerializer(), deserializer: ByteDeserializer(), options: .defaults
        ) { response in
            try response.message
        }
        guard reply.count == payload.count else {
            throw BaselineFailure("unary reply of \(reply.count) bytes, expected \(payload.count)")
        }
    }

    /// Sequential unary calls: each starts when the previous reply has arrived.
    func unary() async throws -> Report.Unary {
        progress("unary: \(settings.unaryWarmup) warm-up + \(settings.unaryCalls) timed calls, one at a time")
        for _ in 0..<settings.unaryWarmup { try await call() }
        var samples = [UInt64](repeating: 0, count: settings.unaryCalls)
        let cpu = CPUTime.now()
        for index in samples.indices {
            let start = nowNanoseconds()
            try await call()
            samples[index] = nowNanoseconds() - start
        }
        let cpuPerCall = cpu.perOperation(samples.count)
        let latency = Percentiles(nanoseconds: samples)
        progress("unary: \(latency.text), CPU \(String(format: "%.1f", cpuPerCall)) µs/call")
        return Report.Unary(
            p50Us: rounded(latency.p50), p99Us: rounded(latency.p99), p999Us: rounded(latency.p999),
            meanUs: rounded(latency.mean), maxUs: rounded(latency.max), cpuUsPerCall: rounded(cpuPerCall), calls: samples.count, warmupCalls: settings.unaryWarmup)
    }

    /// `total` unary calls from a task group that keeps `window` of them outstanding.
    private func concurrentCalls(_ total: Int, window: Int) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            var started = 0
            while started < min(window, total) {
                group.addTask { try await call() }
                started += 1
            }
            while try await group.next() != nil {
                if started < total {
                    group.addTask { try await call() }
                    started += 1
                }
            }
        }
    }

    func unaryInFlight() async throws -> Report.UnaryInFlight {
        let window = settings.window
        progress("unary64: \(settings.concurrentWarmup) warm-up + \(settings.concurrentCalls) timed calls, \(window) in flight")
        let (rate, cpuPerCall) = try await timedAfterWarmUp { calls in try await concurrentCalls(calls, window: window) }
        progress("unary64: \(Int(rate)) calls/s, CPU \(String(format: "%.1f", cpuPerCall)) µs/call")
        return Report.UnaryInFlight(
            callsPerSecond: rounded(rate), cpuUsPerCall: rounded(cpuPerCall), calls: settings.concurrentCalls, inFlight: window)
    }

    /// Runs `run` untimed on `concurrentWarmup` operations, then timed on `concurrentCalls`: the
    /// operations per second and the process's CPU µs per operation of the timed run.
    private func timedAfterWarmUp(_ run: (Int) async throws -> Void) async throws -> (rate: Double, cpu: Double) {
        try await run(settings.concurrentWarmup)
        let (start, cpu) = (nowNanoseconds(), CPUTime.now())
        try await run(settings.concurrentCalls)
        let seconds = Double(nowNanoseconds() - start) / 1e9
        return (Double(settings.concurrentCalls) / seconds, cpu.perOperation(settings.concurrentCalls))
    }

    /// What a stream's producer leaves for the caller once the stream is over.
    private final class StreamOutcome: Sendable {
        let samples = Mutex<[UInt64]>([])
        let cpuPerMessage = Mutex<Double>(.nan)
    }

    /// One bidirectional stream: the producer sends `total` messages keeping at most `window` without
    /// an echo; each echo the response side reads hands the producer one credit. With `timed`, the
    /// producer also times each message from its send to its echo (meaningful for a window of 1),
    /// skipping the first `untimed`, and measures the CPU from there on.
    private func stream(total: Int, window: Int, untimed: Int = 0, timed: Bool) async throws -> StreamOutcome {
        let outcome = StreamOutcome()
        let credits = AsyncStream<Void>.makeStream()
        let payload = self.payload
        let request = StreamingClientRequest(of: [UInt8].self) { writer in
            var echoes = credits.stream.makeAsyncIterator()
            var samples = [UInt64]()
            samples.reserveCapacity(timed ? total - untimed : 0)
            var cpu = CPUTime.now()
            var outstanding = 0
            for index in 0..<total {
                if outstanding == window {
                    guard await echoes.next() != nil else {
                        throw BaselineFailure("the stream's responses ended after \(index - window) of \(total) echoes")
                    }
                    outstanding -= 1
                }
                if timed {
                    if index == untimed { cpu = CPUTime.now() }
                    let start = nowNanoseconds()
                    try await writer.write(payload)
                    outstanding += 1
                    guard await echoes.next() != nil else {
                        throw BaselineFailure("the stream's responses ended after \(index) of \(total) echoes")
                    }
                    outstanding -= 1
                    if index >= untimed { samples.append(nowNanoseconds() - start) }
                } else {
                    try await writer.write(payload)
                    outstanding += 1
                }
            }
            if timed {
                let cpuPerMessage = cpu.perOperation(total - untimed)
                outcome.cpuPerMessage.withLock { $0 = cpuPerMessage }
            }
            outcome.samples.withLock { [samples] in $0 = samples }
        }
        let received = try await client.bidirectionalStreaming(
            request: request, descriptor: Echo.stream,
            serializer: ByteSerializer(), deserializer: ByteDeserializer(), options: .defaults
        ) { response in
            defer { credits.continuation.finish() }
            var received = 0
            for try await message in response.messages {
                guard message.count == payload.count else {
                    throw BaselineFailure("stream echo of \(message.count) bytes, expected \(payload.count)")
                }
                received += 1
                credits.continuation.yield()
            }
            return received
        }
        guard received == total else {
            throw BaselineFailure("the stream echoed \(received) of \(total) messages")
        }
        return outcome
    }

    /// One stream, one message at a time: send, wait for the echo, send the next.
    func streamLatency() async throws -> Report.Stream {
        let (warmup, measured) = (settings.streamWarmup, settings.streamMessages)
        progress("stream: one stream, \(warmup) warm-up + \(measured) timed messages, one at a time")
        let outcome = try await stream(total: warmup + measured, window: 1, untimed: warmup, timed: true)
        let samples = outcome.samples.withLock { $0 }
        guard samples.count == measured else { throw BaselineFailure("\(samples.count) stream samples, expected \(measured)") }
        let latency = Percentiles(nanoseconds: samples)
        let cpuPerMessage = outcome.cpuPerMessage.withLock { $0 }
        progress("stream: \(latency.text), CPU \(String(format: "%.1f", cpuPerMessage)) µs/message")
        return Report.Stream(
            p50Us: rounded(latency.p50), p99Us: rounded(latency.p99), p999Us: rounded(latency.p999),
            meanUs: rounded(latency.mean), maxUs: rounded(latency.max), cpuUsPerMessage: rounded(cpuPerMessage), messages: measured, warmupMessages: warmup)
    }

    /// One stream with `window` messages outstanding; a warm-up stream first.
    func streamInFlight() async throws -> Report.StreamInFlight {
        let window = settings.window
        progress("stream64: a warm-up stream of \(settings.concurrentWarmup), then one stream of \(settings.concurrentCalls) messages, \(window) in flight")
        let (rate, cpuPerMessage) = try await timedAfterWarmUp { messages in _ = try await stream(total: messages, window: window, timed: false) }
        progress("stream64: \(Int(rate)) messages/s, CPU \(String(format: "%.1f", cpuPerMessage)) µs/message")
        return Report.StreamInFlight(
            messagesPerSecond: rounded(rate), cpuUsPerMessage: rounded(cpuPerMessage), messages: settings.concurrentCalls, inFlight: window)
    }
}

/// Three decimals are plenty for µs and rates, and keep the JSON readable.
func rounded(_ value: Double) -> Double {
    (value * 1000).rounded() / 1000
}

/// Progress for the person watching; stdout carries only the JSON.
func progress(_ text: String) {
    FileHandle.standardError.write(Data("· grpc-baseline: \(text)\n".utf8))
}
