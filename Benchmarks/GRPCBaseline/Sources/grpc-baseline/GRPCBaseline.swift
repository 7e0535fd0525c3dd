import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2

/// The releases pinned (exactly) in Package.swift, reported with the figures.
let grpcSwiftVersion = "2.4.3"
let grpcSwiftNIOTransportVersion = "2.9.2"

/// `grpc-baseline [--quick]`: a gRPC echo server and its client in one process, over plaintext
/// HTTP/2 on 127.0.0.1 (an ephemeral port). Progress goes to stderr, one JSON object to stdout.
@main
struct GRPCBaseline {
    static let usage = """
    usage: grpc-baseline [--quick]

    Runs a gRPC Swift \(grpcSwiftVersion) echo server and client in one process (HTTP/2, plaintext,
    127.0.0.1) with 16-byte messages and prints one JSON object on stdout:
      unary     one call at a time: p50/p99/p99.9/mean µs and CPU µs per call
      unary64   64 calls in flight: calls/s and CPU µs per call
      stream    one bidirectional stream, one message at a time: p50/p99 µs and CPU µs per message
      stream64  one bidirectional stream, 64 messages in flight: messages/s and CPU µs per message
    CPU is user + system time of the whole process (getrusage) over the timed part.

      --quick   a tenth of the calls (a smoke run; figures are rough)
      --help    this text
    """

    static func main() async {
        var settings = Settings()
        for argument in CommandLine.arguments.dropFirst() {
            switch argument {
            case "--quick": settings = Settings(quick: true)
            case "--help", "-h":
                print(usage)
                exit(0)
            default:
                FileHandle.standardError.write(Data("grpc-baseline: unknown option '\(argument)'\n\n\(usage)\n".utf8))
                exit(64)
            }
        }
        // A hung call must not hang whoever runs us: give up, loudly, after a generous limit.
        let limit = settings.timeLimitSeconds
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(limit)) {
            FileHandle.standardError.write(Data("grpc-baseline: error: not finished after \(limit) s; giving up\n".utf8))
            exit(1)
        }
        do {
            let report = try await run(settings)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try encoder.encode(report), as: UTF8.self))
            exit(0)
        } catch {
            FileHandle.standardError.write(Data("grpc-baseline: error: \(error)\n".utf8))
            exit(1)
        }
    }

    /// Starts the server on an ephemeral port, connects the client and measures; both shut down
    /// gracefully when the measurements are done (or abruptly when one throws).
    static func run(_ settings: Settings) async throws -> Report {
        let serverTransport = HTTP2ServerTransport.Posix(
            address: .ipv4(host: "127.0.0.1", port: 0), transportSecurity: .plaintext)
        return try await withGRPCServer(transport: serverTransport, services: [EchoService()]) { server in
            let address = try await server.transport.listeningAddress
            guard let port = address.ipv4?.port else {
                throw BaselineFailure("the server listens on \(address), not on an IPv4 address")
            }
            progress("gRPC Swift \(grpcSwiftVersion) (grpc-swift-nio-transport \(grpcSwiftNIOTransportVersion)): server on 127.0.0.1:\(port), HTTP/2 plaintext\(settings.quick ? ", quick run" : "")")
            let clientTransport = try HTTP2ClientTransport.Posix(
                target: .ipv4(address: "127.0.0.1", port: port), transportSecurity: .plaintext)
            return try await withGRPCClient(transport: clientTransport) { client in
                let measurements = Measurements(client: client, settings: settings)
                return Report(
                    unary: try await measurements.unary(),
                    unary64: try await measurements.unaryInFlight(),
                    stream: try await measurements.streamLatency(),
                    stream64: try await measurements.streamInFlight(),
                    quick: settings.quick)
            }
        }
    }
}

/// How many calls and messages each measurement makes.
struct Settings: Sendable {
    var quick = false
    /// Calls or messages kept outstanding by unary64 and stream64.
    var window = 64
    var unaryWarmup: Int { quick ? 200 : 2_000 }
    var unaryCalls: Int { quick ? 2_000 : 20_000 }
    var streamWarmup: Int { unaryWarmup }
    var streamMessages: Int { unaryCalls }
    var concurrentWarmup: Int { quick ? 1_000 : 5_000 }
    var concurrentCalls: Int { quick ? 5_000 : 50_000 }
    var timeLimitSeconds: Int { quick ? 300 : 900 }
}

/// The JSON printed on stdout (µs, per second, and CPU µs per call or message).
struct Report: Encodable, Sendable {
    struct Unary: Encodable, Sendable {
        var p50Us, p99Us, p999Us, meanUs, maxUs, cpuUsPerCall: Double
        var calls, warmupCalls: Int
    }

    struct UnaryInFlight: Encodable, Sendable {
        var callsPerSecond, cpuUsPerCall: Double
        var calls, inFlight: Int
    }

    struct Stream: Encodable, Sendable {
        var p50Us, p99Us, p999Us, meanUs, maxUs, cpuUsPerMessage: Double
        var messages, warmupMessages: Int
    }

    struct StreamInFlight: Encodable, Sendable {
        var messagesPerSecond, cpuUsPerMessage: Double
        var messages, inFlight: Int
    }

    var unary: Unary
    var unary64: UnaryInFlight
    var stream: Stream
    var stream64: StreamInFlight
    var quick: Bool
    var payloadBytes = 16
    var transport = "HTTP/2 plaintext, TCP 127.0.0.1, client and server in one process"
    var grpcSwift = grpcSwiftVersion
    var grpcSwiftNIOTransport = grpcSwiftNIOTransportVersion
}
