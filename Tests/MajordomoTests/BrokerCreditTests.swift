import Majordomo
import MessagePath
import Synchronization
import Testing
import ZeroMQ

/// Flowbus's one 7/MDP extension: a READY with a fifth frame `credit=N` lets the broker keep up to
/// N requests in flight to that worker. Without it, one at a time, as the RFC has it.
@Suite("Broker credit")
struct BrokerCreditTests {
    /// The REQUESTs a raw worker receives, decoded (heartbeats skipped): `expected` of them, each
    /// waited for up to 5 s (a loaded machine is slow, not wrong), then any more that come within
    /// `quiet` (what must not come: a request beyond the worker's credit).
    static func requests(_ peer: RawPeer, expecting expected: Int, thenQuietFor quiet: Duration = .milliseconds(300)) throws -> [(client: Frame, body: [Frame])] {
        var received: [(Frame, [Frame])] = []
        func next(within timeout: Duration) throws -> Bool {
            guard let command = try peer.receiveCommand(timeout: timeout) else { return false }
            guard case .request(let client, let body) = command else {
                Issue.record("expected REQUEST, got \(command)")
                return false
            }
            received.append((client, body))
            return true
        }
        while received.count < expected, try next(within: .seconds(5)) {}
        if received.count == expected {
            while try next(within: quiet) {}
        }
        return received
    }

    @Test func workerWithCreditHoldsThatManyAndMayReplyInAnyOrder() async throws {
        let fixture = try BrokerFixture()
        defer { fixture.broker.stop() }
        let outcome = try await onThread { () throws -> (first: [String], held: [WorkerInfo], afterOneReply: [String], replies: [String]) in
            let worker = try RawPeer(context: fixture.context, endpoint: fixture.endpoint, routingID: "credit/1/1")
            try worker.send(.ready(service: Array("credit".utf8), credit: 3))
            guard waitUntil({ fixture.broker.statistics.workersPerService["credit"] == 1 }) else { return ([], [], [], []) }
            let client = try fixture.client()
            for index in 0..<5 { try client.send(service: "credit", body: frames("r\(index)")) }
            // Three arrive; the fourth waits for a reply.
            let first = try Self.requests(worker, expecting: 3)
            guard first.count == 3 else { return (first.map { text($0.body[0]) }, [], [], []) }
            _ = waitUntil { fixture.broker.workers.first?.inFlight == 3 }
            let held = fixture.broker.workers
            // Replying to the second frees one place: exactly one more request comes.
            try worker.send(.reply(client: first[1].client, body: [Array("done:".utf8) + first[1].body[0]]))
            let more = try Self.requests(worker, expecting: 1)
            for request in [first[0], first[2]] + more {
                try worker.send(.reply(client: request.client, body: [Array("done:".utf8) + request.body[0]]))
            }
            let rest = try Self.requests(worker, expecting: 1)
            for request in rest {
                try worker.send(.reply(client: request.client, body: [Array("done:".utf8) + request.body[0]]))
            }
            var replies: [String] = []
            while replies.count < 5, let reply = try client.receive(timeout: .seconds(2)) { replies.append(text(reply.body[0])) }
            return (first.map { text($0.body[0]) }, held, more.map { text($0.body[0]) }, replies)
        }
        #expect(outcome.first == ["r0", "r1", "r2"])
        #expect(outcome.held.map(\.credit) == [3])
        #expect(outcome.held.map(\.inFlight) == [3])
        #expect(outcome.held.map(\.busy) == [true])
        #expect(outcome.afterOneReply == ["r3"])
        #expect(outcome.replies.sorted() == ["done:r0", "done:r1", "done:r2", "done:r3", "done:r4"])
        let statistics = fixture.broker.statistics
        #expect(statistics.dispatched == 5 && statistics.replies == 5)
        #expect(statistics.badInput.total == 0)
    }

    @Test func plainWorkerHoldsOneRequestAtATime() async throws {
        let fixture = try BrokerFixture()
        defer { fixture.broker.stop() }
        let (first, afterReply, credit) = try await onThread { () throws -> ([String], [String], [Int]) in
            let worker = try RawPeer(context: fixture.context, endpoint: fixture.endpoint)
            try worker.send(.ready(service: Array("plain".utf8)))
            guard waitUntil({ fixture.broker.statistics.workersPerService["plain"] == 1 }) else { return ([], [], []) }
            let client = try fixture.client()
            for index in 0..<2 { try client.send(service: "plain", body: frames("p\(index)")) }
            let first = try Self.requests(worker, expecting: 1)
            guard first.count == 1 else { return (first.map { text($0.body[0]) }, [], []) }
            let credit = fixture.broker.workers.map(\.credit)
            try worker.send(.reply(client: first[0].client, body: first[0].body))
            let second = try Self.requests(worker, expecting: 1)
            return (first.map { text($0.body[0]) }, second.map { text($0.body[0]) }, credit)
        }
        #expect(first == ["p0"])
        #expect(afterReply == ["p1"])
        #expect(credit == [1])
    }

    @Test func creditIsSharedRoundRobinBetweenWorkers() async throws {
        let fixture = try BrokerFixture()
        defer { fixture.broker.stop() }
        let counts = try await onThread { () throws -> [Int] in
            let workers = try (0..<2).map { index in
                try RawPeer(context: fixture.context, endpoint: fixture.endpoint, routingID: "rr/1/\(index)")
            }
            for worker in workers { try worker.send(.ready(service: Array("rr".utf8), credit: 4)) }
            guard waitUntil({ fixture.broker.statistics.workersPerService["rr"] == 2 }) else { return [] }
            let client = try fixture.client()
            for index in 0..<6 { try client.send(service: "rr", body: frames("q\(index)")) }
            return try workers.map { try Self.requests($0, expecting: 3).count }
        }
        // Each worker goes to the back of the line after taking one: 3 and 3, not 4 and 2.
        #expect(counts == [3, 3])
    }

    @Test func replyForARequestNotHeldIsRefused() async throws {
        let fixture = try BrokerFixture()
        defer { fixture.broker.stop() }
        let answer = try await onThread { () throws -> MDPCommand? in
            let worker = try RawPeer(context: fixture.context, endpoint: fixture.endpoint)
            try worker.send(.ready(service: Array("strict".utf8), credit: 8))
            guard waitUntil({ fixture.broker.statistics.workersPerService["strict"] == 1 }) else { return nil }
            let client = try fixture.client()
            try client.send(service: "strict", body: frames("one"))
            guard try Self.requests(worker, expecting: 1, thenQuietFor: .zero).count == 1 else { return nil }
            try worker.send(.reply(client: Array("someone-else".utf8), body: frames("forged")))
            return try worker.receiveCommand(timeout: .seconds(2))
        }
        #expect(answer == .disconnect)
        #expect(fixture.broker.statistics.badInput.unexpectedCommand == 1)
        #expect(fixture.broker.statistics.replies == 0)
    }

    @Test func invalidCreditIsCountedAndTheWorkerIsNotRegistered() async throws {
        let fixture = try BrokerFixture()
        defer { fixture.broker.stop() }
        let echo = fixture.worker("after")
        defer { echo.stop() }
        let reply = try await onThread { () throws -> [Frame] in
            let peer = try RawPeer(context: fixture.context, endpoint: fixture.endpoint)
            for bad in ["credit=0", "credit=1025", "credit=x", "kredit=4"] {
                try peer.send([[], Array("MDPW01".utf8), [0x01], Array("bad".utf8), Array(bad.utf8)])
            }
            _ = waitUntil { fixture.broker.statistics.badInput.malformedFrames == 4 }
            // Nothing is lost for everyone else.
            return try fixture.client().request(service: "after", body: frames("still served"))
        }
        #expect(reply == frames("still served"))
        let statistics = fixture.broker.statistics
        #expect(statistics.badInput.malformedFrames == 4)
        #expect(statistics.workersPerService["bad"] == nil)
    }

    @Test func swiftWorkerOffersItsCreditAndServesPipelinedRequests() async throws {
        let fixture = try BrokerFixture()
        defer { fixture.broker.stop() }
        var configuration = fastWorkerConfiguration(routingID: "pipe/1/1")
        configuration.credit = 16
        let worker = fixture.worker("pipe", configuration: configuration) { [Array("ok:".utf8) + $0.body[0]] }
        defer { worker.stop() }
        #expect(try await fixture.awaitWorkers("pipe", count: 1))
        #expect(fixture.broker.workers.map(\.credit) == [16])
        let replies = try await onThread { () throws -> Set<String> in
            let client = try fixture.client()
            for index in 0..<200 { try client.send(service: "pipe", body: frames("\(index)")) }
            var replies: Set<String> = []
            while replies.count < 200, let reply = try client.receive(timeout: .seconds(5)) { replies.insert(text(reply.body[0])) }
            return replies
        }
        #expect(replies == Set((0..<200).map { "ok:\($0)" }))
        #expect(worker.served.load(ordering: .relaxed) == 200)
    }

    @Test func workerRefusesACreditOutsideTheRange() throws {
        let context = try ZMQContext()
        for credit in [0, -1, MDP.maxCredit + 1] {
            var configuration = WorkerConfiguration()
            configuration.credit = credit
            #expect(throws: MajordomoWorkerError.self) {
                _ = try MajordomoWorker(context: context, endpoint: ipcEndpoint(), service: "x", configuration: configuration, logger: quietLogger)
            }
        }
        #expect(MajordomoWorkerError.invalidCredit(0).description.contains("from 1 to \(MDP.maxCredit)"))
    }

    @Test func workerWithRequestsInFlightDyingLeavesTheOthersServing() async throws {
        let fixture = try BrokerFixture()
        defer { fixture.broker.stop() }
        let survivor = fixture.worker("fragile")
        defer { survivor.stop() }
        #expect(try await fixture.awaitWorkers("fragile", count: 1))
        let (held, reply) = try await onThread { () throws -> (Int, [Frame]?) in
            var doomed: RawPeer? = try RawPeer(context: fixture.context, endpoint: fixture.endpoint, routingID: "doomed/1/1")
            try doomed!.send(.ready(service: Array("fragile".utf8), credit: 4))
            guard waitUntil({ fixture.broker.statistics.workersPerService["fragile"] == 2 }) else { return (0, nil) }
            let client = try fixture.client(timeout: .milliseconds(300), tries: 1)
            for index in 0..<6 { try client.send(service: "fragile", body: frames("\(index)")) }
            _ = waitUntil { (fixture.broker.workers.first { $0.routingID == "doomed/1/1" }?.inFlight ?? 0) > 0 }
            let held = fixture.broker.workers.first { $0.routingID == "doomed/1/1" }?.inFlight ?? 0
            try doomed!.send(.disconnect)
            doomed = nil
            _ = waitUntil { fixture.broker.statistics.workersPerService["fragile"] == 1 }
            // The held requests are gone with their worker (clients retry); new ones are served.
            let again = try fixture.client().request(service: "fragile", body: frames("after"))
            return (held, again)
        }
        #expect(held > 0)
        #expect(reply == frames("after"))
        #expect(fixture.broker.statistics.workersDisconnected == 1)
    }
}

/// `BrokerConfiguration.busyPoll`: after traffic the broker polls without sleeping for a while;
/// heartbeats alone never start it, so an idle broker sleeps.
@Suite("Broker busy poll")
struct BrokerBusyPollTests {
    @Test func heartbeatsAloneNeverStartIt() async throws {
        let fixture = try BrokerFixture()
        defer { fixture.broker.stop() }
        let worker = fixture.worker("quiet")
        defer { worker.stop() }
        #expect(try await fixture.awaitWorkers("quiet", count: 1))
        // Heartbeats both ways every 100 ms for a while, and nothing else.
        #expect(try await eventually { fixture.broker.statistics.heartbeatsSent >= 5 })
        #expect(fixture.broker.statistics.busyPolls == 0)
        let reply = try await onThread { try fixture.client().request(service: "quiet", body: frames("now")) }
        #expect(reply == frames("now"))
        #expect(try await eventually { fixture.broker.statistics.busyPolls > 0 })
    }

    @Test func requestsAreServedWithItOnAndOff() async throws {
        for busyPoll in [Duration.zero, .microseconds(50), .milliseconds(5)] {
            var configuration = fastBrokerConfiguration()
            configuration.busyPoll = busyPoll
            let fixture = try BrokerFixture(configuration: configuration)
            defer { fixture.broker.stop() }
            let worker = fixture.worker("spin")
            defer { worker.stop() }
            #expect(try await fixture.awaitWorkers("spin", count: 1))
            let replies = try await onThread { () throws -> [String] in
                let client = try fixture.client()
                return try (0..<50).map { text(try client.request(service: "spin", body: frames("\($0)"))[0]) }
            }
            #expect(replies == (0..<50).map { "\($0)" }, "busyPoll \(busyPoll)")
            try await Task.sleep(for: .milliseconds(120))
            let statistics = fixture.broker.statistics
            if busyPoll == .zero {
                #expect(statistics.busyPolls == 0)
            } else {
                #expect(statistics.busyPolls > 0, "busyPoll \(busyPoll)")
                #expect(statistics.busyPollHits <= statistics.busyPolls)
            }
        }
    }

    /// A request handed to a worker that never reaches it (lost on the way, as in a partition from
    /// the host) would hold the worker's credit for ever, while its heartbeats keep it registered.
    /// Its heartbeats say how many it holds (`held=N`): once one sent two intervals after the
    /// handing over says fewer, the broker lets the lost one go and hands the worker the next.
    @Test func aRequestThatNeverReachedTheWorkerStopsHoldingItsCredit() async throws {
        let fixture = try BrokerFixture()
        defer { fixture.broker.stop() }
        let outcome = try await onThread { () throws -> (lost: String?, next: String?, counted: Int) in
            let worker = try RawPeer(context: fixture.context, endpoint: fixture.endpoint, routingID: "lossy/1/1")
            try worker.send(.ready(service: Array("lossy".utf8), credit: 1))
            guard waitUntil({ fixture.broker.statistics.workersPerService["lossy"] == 1 }) else { return (nil, nil, 0) }
            let client = try fixture.client()
            try client.send(service: "lossy", body: frames("first"))
            try client.send(service: "lossy", body: frames("second"))
            // The first arrives; the worker acts as if it had not (it never saw it).
            let first = try BrokerCreditTests.requests(worker, expecting: 1, thenQuietFor: .zero)
            // A heartbeat saying it holds none, sent at once, is not taken for a loss: the request may be on its way.
            try worker.send(MDPCommand.heartbeat.frames + [Array("held=0".utf8)])
            if let early = try worker.receiveCommand(timeout: .milliseconds(50)), case .request = early { return (nil, "too early", 0) }
            // Two intervals (200 ms) later it is.
            let deadline = ContinuousClock.now + .seconds(5)
            var next: String?
            while next == nil, ContinuousClock.now < deadline {
                try worker.send(MDPCommand.heartbeat.frames + [Array("held=0".utf8)])
                if case .request(_, let body) = try worker.receiveCommand(timeout: .milliseconds(50)) { next = text(body[0]) }
            }
            _ = waitUntil { fixture.broker.statistics.requestsLostOnTheWay == 1 }
            return (first.first.map { text($0.body[0]) }, next, fixture.broker.statistics.requestsLostOnTheWay)
        }
        #expect(outcome.lost == "first")
        #expect(outcome.next == "second")
        #expect(outcome.counted == 1)
    }
}
