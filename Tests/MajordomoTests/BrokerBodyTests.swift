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
}
