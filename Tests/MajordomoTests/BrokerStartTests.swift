import Foundation
import Majordomo
import Testing
import ZeroMQ

@Suite("Broker start")
struct BrokerStartTests {
    @Test func secondBrokerOnSameIPCEndpointSaysAddressInUse() throws {
        let fixture = try BrokerFixture()
        defer { fixture.broker.stop() }
        do {
            let second = try MajordomoBroker.start(context: fixture.context, endpoints: [fixture.endpoint], logger: quietLogger)
            second.stop()
            Issue.record("a second broker bound \(fixture.endpoint)")
        } catch {
            guard case .addressInUse = error else { Issue.record("unexpected \(error)"); return }
            #expect(error.description.contains("flowbus down"))
        }
    }

    @Test func wildcardTCPPortIsResolvedAndTakenPortIsReported() throws {
        let context = try ZMQContext()
        let first = try MajordomoBroker.start(context: context, endpoints: ["tcp://127.0.0.1:*"], logger: quietLogger)
        defer { first.stop() }
        let resolved = try #require(first.endpoints.first)
        #expect(resolved.hasPrefix("tcp://127.0.0.1:") && !resolved.hasSuffix("*"))
        #expect(throws: BrokerStartError.self) {
            let second = try MajordomoBroker.start(context: context, endpoints: [resolved], logger: quietLogger)
            second.stop()
        }
    }

    @Test func badEndpointSaysWhatToCheck() throws {
        let context = try ZMQContext()
        do {
            let broker = try MajordomoBroker.start(context: context, endpoints: ["tcp://nowhere"], logger: quietLogger)
            broker.stop()
            Issue.record("bound a nonsense endpoint")
        } catch {
            #expect(error.description.contains("check the endpoint"))
        }
    }

    @Test func stopIsIdempotentAndEndsTheThread() throws {
        let fixture = try BrokerFixture()
        #expect(fixture.broker.isRunning)
        fixture.broker.stop()
        fixture.broker.stop()
        #expect(!fixture.broker.isRunning)
    }
}

@Suite("Broker statistics")
struct BrokerStatisticsTests {
    @Test func snapshotIsJSONWithTheDocumentedFields() throws {
        var statistics = BrokerStatistics()
        statistics.requests = 3
        statistics.faultDropped = 1
        statistics.badInput.malformedFrames = 2
        statistics.rejections.expired = 1
        statistics.workersPerService = ["vm.signin": 2]
        let json = try JSONEncoder().encode(statistics)
        let object = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
        for key in ["requests", "dispatched", "replies", "mmiRequests", "rejections", "faultDropped", "badInput",
                    "unroutable", "sendBlocked", "workersPerService", "queuedPerService"] {
            #expect(object[key] != nil, "missing \(key)")
        }
        let bad = try #require(object["badInput"] as? [String: Any])
        #expect(Set(bad.keys) == Set(BadInputKind.allCases.map(\.rawValue)))
        #expect(try JSONDecoder().decode(BrokerStatistics.self, from: json) == statistics)
    }
}
