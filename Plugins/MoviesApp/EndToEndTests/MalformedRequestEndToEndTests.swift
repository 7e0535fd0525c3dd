import FlowbusTesting
import FlowProtocol
import Foundation
import Testing
import ZeroMQ

/// Protocols/README.md §2: a Flowbus request has exactly one body frame. Zero and two are both
/// answered MALFORMED, through the host's broker and a real FlowKit service worker.
@Suite("Malformed requests end to end", .serialized)
struct MalformedRequestEndToEndTests {
    static let manifest = """
        supervisor:
          intensity: 5
          period: 10s
          backoff: { initial: 50ms, max: 1s }
          shutdown_timeout: 3s
        plugins:
          - name: services
            command: movies-services
            restart: permanent

        """

    @Test("zero body frames (answered by the broker) and two (by the worker) both get a MALFORMED Error envelope; the broker counts its one", .timeLimit(.minutes(1)))
    func zeroAndTwoBodyFrames() async throws {
        let host = try await HostFixture.start(manifest: Self.manifest)
        defer { Task { try? await host.stop() } }
        let ready = try await HostFixture.eventually(timeout: .seconds(10), every: .milliseconds(100)) {
            let broker = try await host.status()["broker"] as? [String: Any]
            return ((broker?["workersPerService"] as? [String: Int])?["svc.users"] ?? 0) > 0
        }
        try #require(ready, "no svc.users worker registered:\n\(host.hostLog)")
        let endpoint = try #require(host.endpoint("broker"))
        let envelope = try Envelope.wrapping(Flowbus_V1_Echo(), writer: "test").encoded()
        let service = Array("svc.users".utf8)

        let replies = try await onThread {
            let socket = try ZMQSocket(context: try ZMQContext(), type: .dealer, linger: .zero)
            try socket.connect(endpoint)
            try socket.setReceiveTimeout(.seconds(5))
            var replies: [[Frame]] = []
            for body in [[], [envelope, envelope]] as [[Frame]] {
                // A raw DEALER: MajordomoClient always sends at least one body frame.
                try socket.send([[], Array("MDPC01".utf8), service] + body)
                replies.append(try socket.receiveMessage() ?? [])
            }
            return replies
        }

        for (reply, (count, writer)) in zip(replies, [(0, "broker"), (2, "services/0")]) {
            try #require(reply.count == 4, "expected one REPLY with one body frame, got \(reply.count) frames")
            #expect(reply[2] == service)
            let answer = try Envelope.decodeChecked(reply[3])
            let error = try #require(answer.carriedError)
            #expect(error.code == .malformed)
            #expect(error.message.contains("had \(count) body frames; a Flowbus request is exactly one Envelope frame"), "\(error.message)")
            #expect(error.hint.contains("Envelope"))
            #expect(answer.writer == writer)
        }
        let counted = try await HostFixture.eventually(timeout: .seconds(3), every: .milliseconds(100)) {
            let broker = try await host.status()["broker"] as? [String: Any]
            return (broker?["rejections"] as? [String: Any])?["malformed"] as? Int == 1
                && (broker?["badInput"] as? [String: Any])?["malformedFrames"] as? Int == 1
        }
        let broker = try await host.status()["broker"] ?? "no broker"
        #expect(counted, "ps --json broker: \(broker)")
    }
}
