import Foundation
import Majordomo
import Synchronization
import Testing
import ZeroMQ

/// 7/MDP gives a client request at least one body frame. One that ends at its service name is
/// answered by the broker (its rejection reply); any number of body frames from one up reaches
/// the worker, which alone knows what its body holds.
@Suite("Broker: request bodies")
struct BrokerBodyTests {
    @Test func aRequestWithNoBodyFrameIsAnsweredAsMalformedAndNeverReachesTheWorker() async throws {
        let seen = Mutex<[BrokerRejection]>([])
        var configuration = fastBrokerConfiguration()
        configuration.rejectionReply = { rejection in
            seen.withLock { $0.append(rejection) }
            return [Array("error:\(rejection.reason.rawValue)".utf8)]
        }
        let fixture = try BrokerFixture(configuration: configuration)
        defer { fixture.broker.stop() }
        let worker = fixture.worker("svc.bodies")
        defer { worker.stop() }
        #expect(try await fixture.awaitWorkers("svc.bodies", count: 1))

        let header: [Frame] = [[], Array("MDPC01".utf8), Array("svc.bodies".utf8)]
        let replies = try await onThread {
            let peer = try RawPeer(context: fixture.context, endpoint: fixture.endpoint)
            var replies: [[Frame]?] = []
            for body in [[], frames("one"), frames("one", "two")] {
                try peer.send(header + body)
                replies.append(try peer.receive(timeout: .seconds(3)))
            }
            // 8/MMI bodies are the broker's own plain text: an empty one is only counted.
            try peer.send([[], Array("MDPC01".utf8), Array("mmi.service".utf8)])
            replies.append(try peer.receive(timeout: .milliseconds(300)))
            return replies
        }
        #expect(replies[0] == header + frames("error:malformed"))
        // The echo worker got the others as they were sent.
        #expect(replies[1] == header + frames("one"))
        #expect(replies[2] == header + frames("one", "two"))
        #expect(replies[3] == nil)
        #expect(worker.served.load(ordering: .relaxed) == 2)

        let rejection = try #require(seen.withLock { $0.first })
        #expect(rejection.reason == .malformed && rejection.serviceName == "svc.bodies")
        #expect(rejection.detail.contains("0 body frames"))
        #expect(try await eventually { fixture.broker.statistics.badInput.malformedFrames == 2 })
        let statistics = fixture.broker.statistics
        #expect(statistics.rejections.malformed == 1)
        #expect(statistics.rejections.total == 1)
        #expect(statistics.requests == 2)
    }

    /// A request a ready worker takes at once and its REPLY go on as the parts the broker received
    /// (no copy); a request that waits for the worker is read as frames and queued. Both reach the
    /// other side frame for frame: several body frames, an empty one, one larger than the parts
    /// the broker keeps between messages (64 KiB).
    @Test func bodiesHandedOnWithoutACopyArriveFrameForFrame() async throws {
        // The raw worker sends no heartbeats: a liveness of 5 s outlasts the test.
        let fixture = try BrokerFixture(configuration: fastBrokerConfiguration(heartbeat: .milliseconds(500)))
        defer { fixture.broker.stop() }
        let large = Frame((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let bodies: [[Frame]] = [frames("one"), [large, [], Array("tail".utf8)], [[], large]]
        let service = Array("svc.raw".utf8)
        let seen = try await onThread {
            let worker = try RawPeer(context: fixture.context, endpoint: fixture.endpoint)
            try worker.send(.ready(service: service, credit: 1))
            let registered = Date() + 5
            while fixture.broker.statistics.workersPerService["svc.raw"] != 1, Date() < registered { Thread.sleep(forTimeInterval: 0.01) }
            let client = try RawPeer(context: fixture.context, endpoint: fixture.endpoint, routingID: "raw-client")
            var seen: [String] = []
            func expectRequest(_ body: [Frame]) throws {
                guard let frames = try worker.receive(timeout: .seconds(3)) else { throw RawPeerTimeout() }
                if frames.count > 1, frames[2] == MDP.WorkerCommand.heartbeat.frame { return try expectRequest(body) }
                seen.append(frames == [[], MDP.workerHeader, MDP.WorkerCommand.request.frame, Array("raw-client".utf8), []] + body ? "request" : "bad request")
                // The worker answers with the body reversed, so each direction carries its own frames.
                try worker.send([[], MDP.workerHeader, MDP.WorkerCommand.reply.frame, Array("raw-client".utf8), []] + body.reversed())
                guard let reply = try client.receive(timeout: .seconds(3)) else { throw RawPeerTimeout() }
                seen.append(reply == [[], MDP.clientHeader, service] + body.reversed() ? "reply" : "bad reply")
            }
            // Taken at once: the broker has a ready worker.
            for body in bodies {
                try client.send([[], MDP.clientHeader, service] + body)
                try expectRequest(body)
            }
            // Queued: the second waits until the worker answers the first.
            try client.send([[], MDP.clientHeader, service] + bodies[1])
            try client.send([[], MDP.clientHeader, service] + bodies[2])
            try expectRequest(bodies[1])
            try expectRequest(bodies[2])
            return seen
        }
        #expect(seen == Array(repeating: ["request", "reply"], count: 5).flatMap { $0 })
        #expect(try await eventually { fixture.broker.statistics.replies == 5 })
        let statistics = fixture.broker.statistics
        #expect(statistics.requests == 5)
        #expect(statistics.dispatched == 5)
        #expect(statistics.badInput.total == 0)
    }
}

private struct RawPeerTimeout: Error {}
