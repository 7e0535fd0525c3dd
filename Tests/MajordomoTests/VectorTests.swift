import FlowProtocol
import Foundation
import Majordomo
import Testing
import ZeroMQ

/// The golden MDP vectors of Protocols/vectors: what any client or worker in any language sends.
@Suite("MDP golden vectors")
struct VectorTests {
    static func mdpVectors() throws -> [FrameVector] {
        let directory = try #require(FrameVectors.directory(nearFile: #filePath) ?? vectorsFolder(), "Protocols/vectors not found above \(#filePath)")
        return try FrameVectors.loadAll(in: directory).filter { $0.name.hasPrefix("mdp-") }
    }

    /// Protocols/vectors found by its MDP files, for while its README (which `FrameVectors` looks for) is absent.
    static func vectorsFolder() -> URL? {
        var url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while url.path != "/" {
            let candidate = url.appendingPathComponent("Protocols/vectors")
            if FileManager.default.fileExists(atPath: candidate.appendingPathComponent("mdp-worker-ready.frames").path) { return candidate }
            url = url.deletingLastPathComponent()
        }
        return nil
    }

    static func vector(_ name: String) throws -> [Frame] {
        try #require(try mdpVectors().first { $0.name == name }, "vector \(name) missing").frames
    }

    @Test func everyMDPVectorDecodesAndReencodesToTheSameFrames() throws {
        let vectors = try Self.mdpVectors()
        #expect(vectors.count >= 10)
        for vector in vectors {
            let direction: MDPDirection = vector.name.contains("reply") && vector.name.contains("client") || vector.name.hasPrefix("mdp-mmi-service-reply")
                ? .fromBroker : .toBroker
            let command = try MDPCommand.decode(vector.frames, direction: direction)
            #expect(command.frames == vector.frames, "\(vector.name)")
        }
    }

    @Test func vectorsMeanWhatTheirNamesSay() throws {
        let echo = Array("flowbus.echo".utf8)
        #expect(try MDPCommand.decode(Self.vector("mdp-worker-ready"), direction: .toBroker) == .ready(service: echo))
        #expect(try MDPCommand.decode(Self.vector("mdp-worker-ready-credit"), direction: .toBroker) == .ready(service: echo, credit: 16))
        #expect(try MDPCommand.decode(Self.vector("mdp-worker-heartbeat"), direction: .toBroker) == .heartbeat)
        #expect(try MDPCommand.decode(Self.vector("mdp-worker-disconnect"), direction: .toBroker) == .disconnect)
        guard case .request(let client, _) = try MDPCommand.decode(Self.vector("mdp-worker-request"), direction: .fromBroker) else {
            Issue.record("mdp-worker-request is not a worker REQUEST")
            return
        }
        #expect(client == [0x00, 0x6b, 0x8b, 0x45, 0x67])
        guard case .clientRequest(let service, _) = try MDPCommand.decode(Self.vector("mdp-client-request"), direction: .toBroker) else {
            Issue.record("mdp-client-request is not a client REQUEST")
            return
        }
        #expect(service == echo)
    }

    /// Raw sockets replay the vectors through a live broker: what comes out matches the vectors
    /// byte for byte, except the client address, which the broker's ROUTER chooses.
    @Test func brokerTurnsVectorsIntoVectors() async throws {
        let clientRequest = try Self.vector("mdp-client-request")
        let workerRequest = try Self.vector("mdp-worker-request")
        let workerReply = try Self.vector("mdp-worker-reply")
        let clientReply = try Self.vector("mdp-client-reply")
        let mmiRequest = try Self.vector("mdp-mmi-service-request")
        let mmiReply = try Self.vector("mdp-mmi-service-reply")
        let ready = try Self.vector("mdp-worker-ready")
        let fixture = try BrokerFixture()
        defer { fixture.broker.stop() }

        let (requestSeen, replySeen, mmiSeen) = try await onThread {
            let worker = try RawPeer(context: fixture.context, endpoint: fixture.endpoint)
            try worker.send(ready)
            let client = try RawPeer(context: fixture.context, endpoint: fixture.endpoint)
            _ = waitUntil { fixture.broker.statistics.workersPerService["flowbus.echo"] == 1 }
            try client.send(clientRequest)
            var requestSeen = try worker.receive(timeout: .seconds(2))
            while requestSeen == MDPCommand.heartbeat.frames { requestSeen = try worker.receive(timeout: .seconds(2)) }
            var reply = workerReply
            reply[3] = requestSeen?[3] ?? []
            try worker.send(reply)
            let replySeen = try client.receive(timeout: .seconds(2))
            try client.send(mmiRequest)
            let mmiSeen = try client.receive(timeout: .seconds(2))
            return (requestSeen, replySeen, mmiSeen)
        }
        let request = try #require(requestSeen)
        #expect(request.count == workerRequest.count)
        #expect(Array(request[0..<3]) == Array(workerRequest[0..<3]))
        #expect(Array(request[4...]) == Array(workerRequest[4...]))
        #expect(replySeen == clientReply)
        #expect(mmiSeen == mmiReply)
    }
}
