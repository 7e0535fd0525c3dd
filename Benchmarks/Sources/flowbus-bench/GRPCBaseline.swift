import Foundation
import Logging

/// `grpc`: gRPC Swift beside Flowbus's 7/MDP, measured in the same run on the same machine.
///
/// The gRPC side is Benchmarks/GRPCBaseline, a package of its own (so this package never builds
/// gRPC, SwiftNIO and HTTP/2): its `grpc-baseline` runs an echo server and client in one process over
/// plaintext HTTP/2 on 127.0.0.1 and prints its figures as JSON. The Flowbus side reuses mdp-rtt's
/// one-at-a-time round trip and mdp-throughput's pipelined client (64 in flight, one worker, credit
/// 128). No target: the rows are context, the ratio is Flowbus ÷ gRPC.
struct GRPCBaseline {
    static let name = BenchmarkName.grpc.rawValue
    /// Requests, calls or stream messages kept outstanding by the pipelined measurements.
    static let window = 64
    /// The MDP worker's credit (Flowbus's READY extension) for the pipelined Flowbus figure.
    static let credit = 128

    let options: Options
    let logger: Logger

    private var repository: URL { URL(fileURLWithPath: options.repositoryPath) }
    private var packagePath: String { repository.appendingPathComponent("Benchmarks/GRPCBaseline").path }
    private var binary: String { packagePath + "/.build/release/grpc-baseline" }

    func run() throws(BenchError) -> [ResultRow] {
        if options.flowbusOnly {
            return [.unavailable(Self.name, "--flowbus-only skips the baselines, and gRPC is one")]
        }
        if let reason = prepare() { return [.unavailable(Self.name, reason)] }
        let grpc = try measureGRPC()

        let scratch = try ScratchDirectory()
        let roundTrip = MDPRoundTrip(options: options, logger: logger)
        progress("grpc: Flowbus MDP round trip, one at a time, \(roundTrip.warmup) warm-up + \(roundTrip.measured) requests (as mdp-rtt)")
        let flowbus = try roundTrip.measureFlowbus(scratch, configuration: options.brokerConfiguration(), label: "grpc flowbus one at a time")
        progress("grpc: Flowbus MDP \(flowbus.latency.text), CPU \(format(flowbus.cpu)) µs/request")
        let throughput = MDPThroughput(options: options, logger: logger, window: Self.window)
        progress("grpc: Flowbus MDP, \(Self.window) in flight, 1 worker with credit \(Self.credit), \(throughput.warmup) warm-up + \(throughput.measured) requests (as mdp-throughput)")
        let pipelined = try throughput.measureFlowbus(scratch, workers: 1, lanes: 1, credit: Self.credit)
        progress("grpc: Flowbus MDP \(Self.window) in flight: \(grouped(pipelined.perSecond)) req/s, CPU \(format(pipelined.cpu)) µs/request")

        let version = "gRPC Swift \(grpc.grpcSwift)"
        let (unary, unary64, stream, stream64) = (grpc.unary, grpc.unary64, grpc.stream, grpc.stream64)
        return [
            ResultRow(Self.name, "unary p50", unit: "µs", flowbus: flowbus.latency.p50, raw: unary.p50Us, rawLabel: "gRPC unary", target: "-",
                      note: "grpc: FLOWBUS is Flowbus 7/MDP (MajordomoClient → broker → MajordomoWorker over ipc://, one request at a time, "
                        + "\(roundTrip.warmup) warm-up + \(roundTrip.measured) requests, as mdp-rtt); the other column is \(version) "
                        + "(grpc-swift-nio-transport \(grpc.grpcSwiftNIOTransport ?? "?"), HTTP/2 plaintext over TCP 127.0.0.1, client and server in one process, "
                        + "byte-array messages without protobuf) unary echo, one call at a time (\(unary.calls) timed calls). 16-byte payloads on both sides. "
                        + "Ratio = Flowbus ÷ gRPC: below 1 Flowbus is faster. CPU = user + system time of the whole process over the timed calls ÷ calls "
                        + "(Flowbus's includes the broker's busy poll, \(format(options.brokerConfiguration().busyPoll / .microseconds(1))) µs after traffic; see --busy-poll). "
                        + "Means: Flowbus \(format(flowbus.latency.mean)) µs, gRPC \(format(unary.meanUs)) µs"),
            ResultRow(Self.name, "unary p99", unit: "µs", flowbus: flowbus.latency.p99, raw: unary.p99Us, rawLabel: "gRPC unary", target: "-"),
            ResultRow(Self.name, "unary p99.9", unit: "µs", flowbus: flowbus.latency.p999, raw: unary.p999Us, rawLabel: "gRPC unary", target: "-"),
            ResultRow(Self.name, "CPU per call", unit: "µs", flowbus: flowbus.cpu, raw: unary.cpuUsPerCall, rawLabel: "gRPC unary", target: "-"),
            ResultRow(Self.name, "\(Self.window) in flight calls/s", unit: "req/s", flowbus: pipelined.perSecond, raw: unary64.callsPerSecond,
                      rawLabel: "gRPC unary", target: "-",
                      note: "grpc, \(Self.window) in flight: Flowbus's MajordomoClient keeps \(Self.window) requests outstanding through the broker to one worker "
                        + "whose READY offers credit \(Self.credit) (\(throughput.measured) requests after \(throughput.warmup), as mdp-throughput); gRPC "
                        + "keeps \(unary64.inFlight) unary calls outstanding from a task group on one HTTP/2 connection (\(unary64.calls) calls). "
                        + "Ratio above 1: Flowbus is faster"),
            ResultRow(Self.name, "CPU per call, \(Self.window) in flight", unit: "µs", flowbus: pipelined.cpu, raw: unary64.cpuUsPerCall,
                      rawLabel: "gRPC unary", target: "-"),
            ResultRow(Self.name, "stream p50", unit: "µs", flowbus: flowbus.latency.p50, raw: stream.p50Us, rawLabel: "gRPC stream", target: "-",
                      note: "grpc, stream: gRPC echoes messages on one bidirectional stream, one at a time (send, await the echo; \(stream.messages) timed "
                        + "messages, p99.9 \(format(stream.p999Us)) µs) and pipelined with \(stream64.inFlight) outstanding (\(stream64.messages) messages). "
                        + "MDP has no streams: the Flowbus figures are the same MDP request/reply ones as the unary rows"),
            ResultRow(Self.name, "stream p99", unit: "µs", flowbus: flowbus.latency.p99, raw: stream.p99Us, rawLabel: "gRPC stream", target: "-"),
            ResultRow(Self.name, "CPU per message", unit: "µs", flowbus: flowbus.cpu, raw: stream.cpuUsPerMessage, rawLabel: "gRPC stream", target: "-"),
            ResultRow(Self.name, "\(Self.window) in flight messages/s", unit: "msg/s", flowbus: pipelined.perSecond, raw: stream64.messagesPerSecond,
                      rawLabel: "gRPC stream", target: "-"),
            ResultRow(Self.name, "CPU per message, \(Self.window) in flight", unit: "µs", flowbus: pipelined.cpu, raw: stream64.cpuUsPerMessage,
                      rawLabel: "gRPC stream", target: "-"),
        ]
    }

    /// Builds grpc-baseline (unless --skip-build) and checks it is there; returns why not, if not.
    private func prepare() -> String? {
        guard FileManager.default.fileExists(atPath: packagePath + "/Package.swift") else {
            return "\(packagePath)/Package.swift is missing (is --repo the Flowbus repository?)"
        }
        if !options.skipBuild {
            progress("grpc: swift build -c release --package-path Benchmarks/GRPCBaseline (in \(repository.path); the first build fetches and compiles gRPC, SwiftNIO and BoringSSL: several minutes)")
            let started = monotonicNanoseconds()
            let (status, output) = IdleMemory.execute(
                "/usr/bin/env", ["swift", "build", "-c", "release", "--package-path", packagePath], in: repository)
            guard status == 0 else {
                // "file:line:col: error: ..." or "error: ...", not the compiler's excerpts of the source.
                let errors = output.split(separator: "\n").filter { $0.hasPrefix("error:") || $0.contains(": error:") }.prefix(3)
                let tail = output.trimmingCharacters(in: .whitespacesAndNewlines).suffix(300)
                let detail = !errors.isEmpty ? errors.joined(separator: " | ") : (tail.isEmpty ? "no output" : String(tail))
                return "Benchmarks/GRPCBaseline does not build (`swift build -c release --package-path Benchmarks/GRPCBaseline` exited \(status)): \(detail)"
            }
            progress("grpc: built in \(format(Double(monotonicNanoseconds() - started) / 1e9)) s")
        }
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            return "\(binary) is missing; run without --skip-build, or `swift build -c release --package-path Benchmarks/GRPCBaseline` at the repository root"
        }
        return nil
    }

    /// What grpc-baseline prints on stdout (the fields used here).
    struct Figures: Decodable {
        struct Unary: Decodable { var p50Us, p99Us, p999Us, meanUs, cpuUsPerCall: Double; var calls: Int }
        struct UnaryInFlight: Decodable { var callsPerSecond, cpuUsPerCall: Double; var calls, inFlight: Int }
        struct Stream: Decodable { var p50Us, p99Us, p999Us, cpuUsPerMessage: Double; var messages: Int }
        struct StreamInFlight: Decodable { var messagesPerSecond, cpuUsPerMessage: Double; var messages, inFlight: Int }
        var unary: Unary
        var unary64: UnaryInFlight
        var stream: Stream
        var stream64: StreamInFlight
        var grpcSwift: String
        var grpcSwiftNIOTransport: String?
    }

    /// Runs grpc-baseline (its progress goes straight to our stderr) and decodes its JSON.
    private func measureGRPC() throws(BenchError) -> Figures {
        let scratch = try ScratchDirectory()
        let outputPath = scratch.path + "/grpc-baseline.json"
        guard FileManager.default.createFile(atPath: outputPath, contents: nil),
              let output = FileHandle(forWritingAtPath: outputPath) else {
            throw BenchError("cannot create \(outputPath)")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = options.quick ? ["--quick"] : []
        process.currentDirectoryURL = repository
        process.standardOutput = output
        process.standardError = FileHandle.standardError
        progress("grpc: \(binary)\(options.quick ? " --quick" : "")")
        do { try process.run() } catch {
            try? output.close()
            throw BenchError("cannot start \(binary): \(error)")
        }
        // grpc-baseline gives up on its own after 5 (quick) or 15 minutes; this is the backstop.
        let limit: UInt64 = options.quick ? 360 : 960
        let deadline = monotonicNanoseconds() + limit * 1_000_000_000
        while process.isRunning && monotonicNanoseconds() < deadline {
            Thread.sleep(forTimeInterval: 0.05)
        }
        if process.isRunning {
            progress("grpc: grpc-baseline (pid \(process.processIdentifier)) still running after \(limit) s; stopping it")
            process.terminate()
            process.waitUntilExit()
            try? output.close()
            throw BenchError("grpc-baseline did not finish within \(limit) s")
        }
        process.waitUntilExit()
        try? output.close()
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            let how = process.terminationReason == .exit ? "exited \(process.terminationStatus)" : "was killed by signal \(process.terminationStatus)"
            throw BenchError("grpc-baseline \(how); its error is on stderr above")
        }
        guard let line = text.split(separator: "\n").last(where: { $0.hasPrefix("{") }) else {
            throw BenchError("grpc-baseline printed no JSON object: '\(text.prefix(200))'")
        }
        do {
            return try JSONDecoder().decode(Figures.self, from: Data(line.utf8))
        } catch {
            throw BenchError("cannot read grpc-baseline's JSON (\(error)): '\(line.prefix(200))'")
        }
    }
}
