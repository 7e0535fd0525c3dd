import FlowbusTesting
import Foundation
import Logging
import Majordomo
import Testing
import ZeroMQ

/// CURVE and the allow-list on TCP, as `flowbus keys` and `flowbus up --curve-secret --allow` set them up.
@Suite("CURVE end to end", .serialized)
struct CurveEndToEndTests {
    @Test("listening beyond loopback without CURVE is refused, saying how to fix it")
    func exposureWithoutCurveIsRefused() async throws {
        let flowbus = try #require(FlowbusProcesses.flowbusExecutable())
        let up = try await FlowbusProcesses.run(
            flowbus, ["up", "--run-dir", TestScratch.directory("fbc"), "--broker", "tcp://0.0.0.0:5555"])
        #expect(up.status != 0)
        #expect(up.output.contains("CURVE"), "\(up.output)")
        #expect(up.output.contains("flowbus keys"), "\(up.output)")
    }

    @Test("an allow-listed client key is served; any other key is refused and counted", .timeLimit(.minutes(1)))
    func allowListDecidesWhoIsServed() async throws {
        let flowbus = try #require(FlowbusProcesses.flowbusExecutable())
        let keys = TestScratch.directory("fbk")
        for name in ["host", "alice", "mallory"] {
            let made = try await FlowbusProcesses.run(flowbus, ["keys", "--out", "\(keys)/\(name)"])
            try #require(made.status == 0, "\(made.output)")
        }

        var host: HostFixture?
        var port = 0
        for _ in 0..<5 where host == nil {
            // Below Linux's ephemeral range (32768–60999), where outgoing connections take their
            // local ports and could hold the Clone ports (seen: "address in use" on port + 1).
            port = Int.random(in: 20_000..<32_000)
            host = try? await HostFixture.start(
                manifest: echoManifest([("echo", 1)]),
                arguments: [
                    "--broker", "tcp://127.0.0.1:\(port)", "--clone", "tcp://127.0.0.1:\(port + 1)",
                    "--curve-secret", "\(keys)/host.key", "--allow", "\(keys)/alice.pub",
                    // Open: this test is about who may connect; what a connected client may call is
                    // ClosedBusEndToEndTests' (closed, alice could not call flowbus.echo, a plugin service).
                    "--open",
                ])
        }
        let running = try #require(host, "could not start a CURVE host on a free port")
        defer { Task { try? await running.stop() } }
        try await BusEndToEndTests.waitForEcho(running)

        let brokerEndpoint = "tcp://127.0.0.1:\(port)"
        let serverKey = try CurveKey(z85: String(decoding: FileManager.default.contents(atPath: "\(keys)/host.pub")!, as: UTF8.self))
        @Sendable func client(_ name: String) throws -> MajordomoClient {
            var configuration = ClientConfiguration()
            configuration.timeout = .milliseconds(700)
            configuration.tries = 1
            configuration.curveServerKey = serverKey
            configuration.curveKeyPair = try CurveKeyPair(secretKey: CurveKey(z85: String(
                decoding: FileManager.default.contents(atPath: "\(keys)/\(name).key")!, as: UTF8.self)))
            return try MajordomoClient(
                context: try ZMQContext(), endpoint: brokerEndpoint, configuration: configuration,
                logger: Logger(label: "flowbus.test"))
        }
        let aliceReply = try await onThread { try client("alice").request(service: "flowbus.echo", body: [Array("hi".utf8)]) }
        #expect(aliceReply == [Array("hi".utf8)])
        let malloryRefused = try await onThread { () -> Bool in
            do {
                _ = try client("mallory").request(service: "flowbus.echo", body: [Array("hi".utf8)])
                return false
            } catch {
                return true
            }
        }
        #expect(malloryRefused, "a key off the allow-list must not be served")
        let denied = try await running.status()["curveDenied"] as? Int
        #expect((denied ?? 0) >= 1)
    }
}
