import Foundation
import Majordomo
import MessagePath
import Synchronization
import Testing
import ZeroMQ

@Suite("Broker routing")
struct BrokerRoutingTests {
    @Test func requestReachesWorkerAndReplyComesBack() async throws {
        let fixture = try BrokerFixture()
        defer { fixture.broker.stop() }
        let worker = fixture.worker("echo", configuration: fastWorkerConfiguration(routingID: "echo/4242/1")) { request in
            [Array("echo:".utf8) + request.body[0]] + request.body.dropFirst()
        }
        defer { worker.stop() }
        let reply = try await onThread {
            try fixture.client().request(service: "echo", body: frames("hi", "there"))
        }
        #expect(reply == frames("echo:hi", "there"))
        let statistics = fixture.broker.statistics
        #expect(statistics.requests == 1 && statistics.dispatched == 1 && statistics.replies == 1)
        #expect(statistics.workersPerService == ["echo": 1])
        let workers = fixture.broker.workers
        #expect(workers.map(\.routingID) == ["echo/4242/1"])
        #expect(workers.first?.service == "echo")
        #expect(workers.first?.requestsServed == 1)
    }

    @Test func loadIsSharedByWorkersOfAService() async throws {
        let fixture = try BrokerFixture()
        defer { fixture.broker.stop() }
        // Each request takes a few milliseconds, as real work does: a worker that answers at once
        // would take back most of the queue on a loaded machine before the others' threads run.
        let workers = (0..<3).map { _ in
            fixture.worker("share") { request in
                Thread.sleep(forTimeInterval: 0.003)
                return request.body
            }
        }
        defer { workers.forEach { $0.stop() } }
        #expect(try await fixture.awaitWorkers("share", count: 3))
        let replies = try await onThread {
            let client = try fixture.client()
            for index in 0..<60 { try client.send(service: "share", body: [Array("\(index)".utf8)]) }
            var received = 0
            while received < 60, try client.receive(timeout: .seconds(5)) != nil { received += 1 }
            return received
        }
        #expect(replies == 60)
        let served = workers.map { $0.served.load(ordering: .relaxed) }
        #expect(served.reduce(0, +) == 60)
        // One request at a time per worker and least-recently-used order: every worker takes a share.
        #expect(served.allSatisfy { $0 >= 5 }, "served: \(served)")
    }

    @Test func requestQueuedBeforeAnyWorkerIsServedWhenOneArrives() async throws {
        var configuration = fastBrokerConfiguration()
        configuration.requestExpiry = .seconds(10)
        let fixture = try BrokerFixture(configuration: configuration)
        defer { fixture.broker.stop() }
        let pending = Task {
            try await onThread { try fixture.client(timeout: .seconds(8)).request(service: "late", body: frames("early")) }
        }
        #expect(try await eventually { fixture.broker.statistics.queuedPerService["late"] == 1 })
        let worker = fixture.worker("late")
        defer { worker.stop() }
        #expect(try await pending.value == frames("early"))
        #expect(fixture.broker.statistics.queuedPerService.isEmpty)
    }

    @Test func requestToAbsentServiceExpiresWithRejectionReply() async throws {
        let seen = Mutex<[BrokerRejection]>([])
        var configuration = fastBrokerConfiguration()
        configuration.requestExpiry = .milliseconds(300)
        configuration.rejectionReply = { rejection in
            seen.withLock { $0.append(rejection) }
            return [Array("error:\(rejection.reason.rawValue)".utf8)]
        }
        let fixture = try BrokerFixture(configuration: configuration)
        defer { fixture.broker.stop() }
        let started = ContinuousClock.now
        let reply = try await onThread { try fixture.client(timeout: .seconds(3)).request(service: "nobody.home", body: frames("x")) }
        #expect(reply == frames("error:expired"))
        #expect(ContinuousClock.now - started >= .milliseconds(250))
        let rejection = try #require(seen.withLock { $0.first })
        #expect(rejection.reason == .expired && rejection.serviceName == "nobody.home")
        #expect(rejection.detail.contains("no worker for service nobody.home"))
        let statistics = fixture.broker.statistics
        #expect(statistics.rejections.expired == 1)
        #expect(statistics.badInput.unknownService == 1)
    }

    @Test func silentDropWithoutRejectionReply() async throws {
        var configuration = fastBrokerConfiguration()
        configuration.requestExpiry = .milliseconds(100)
        let fixture = try BrokerFixture(configuration: configuration)
        defer { fixture.broker.stop() }
        await #expect(throws: MajordomoClientError.self) {
            try await onThread { try fixture.client(timeout: .milliseconds(500)).request(service: "void", body: frames("x")) }
        }
        #expect(fixture.broker.statistics.rejections.expired == 1)
    }

    @Test func fullQueueIsRejected() async throws {
        var configuration = fastBrokerConfiguration()
        configuration.maxQueuedRequestsPerService = 2
        configuration.requestExpiry = .seconds(10)
        configuration.rejectionReply = { [Array($0.reason.rawValue.utf8)] }
        let fixture = try BrokerFixture(configuration: configuration)
        defer { fixture.broker.stop() }
        let reply = try await onThread {
            let client = try fixture.client()
            for _ in 0..<3 { try client.send(service: "busy", body: frames("x")) }
            return try client.receive(timeout: .seconds(3))
        }
        #expect(reply == MajordomoReply(service: "busy", body: frames("queueFull")))
        #expect(fixture.broker.statistics.rejections.queueFull == 1)
        #expect(fixture.broker.statistics.queuedPerService["busy"] == 2)
    }

    @Test func mmiServiceAnswers200404And501() async throws {
        let fixture = try BrokerFixture()
        defer { fixture.broker.stop() }
        let worker = fixture.worker("vm.present")
        defer { worker.stop() }
        #expect(try await fixture.awaitWorkers("vm.present", count: 1))
        let answers = try await onThread {
            let client = try fixture.client()
            return [
                try client.request(service: "mmi.service", body: frames("vm.present")),
                try client.request(service: "mmi.service", body: frames("vm.absent")),
                try client.request(service: "mmi.nonsense", body: frames("vm.present")),
            ]
        }
        #expect(answers == [frames("200"), frames("404"), frames("501")])
        let statistics = fixture.broker.statistics
        #expect(statistics.mmiRequests == 3)
        #expect(statistics.requests == 0)
        #expect(statistics.badInput.unknownService == 1)
    }
}
