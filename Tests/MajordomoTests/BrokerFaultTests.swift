import Foundation
import Synchronization
import Majordomo
import MessagePath
import Testing
import ZeroMQ

@Suite("Broker faults and limits")
struct BrokerFaultTests {
    @Test func clientRetrySurvivesOneDroppedRequest() async throws {
        let faults = FaultRules()
        let fixture = try BrokerFixture(faults: faults)
        defer { fixture.broker.stop() }
        let worker = fixture.worker("retry.me")
        defer { worker.stop() }
        #expect(try await fixture.awaitWorkers("retry.me", count: 1))
        // The first try is dropped, and only it: a rule taken off once the drop was seen raced
        // the client's tries on a loaded machine (all three dropped before the test looked).
        try faults.install(FaultRule(id: "blackout", scope: .service, prefix: "retry.", action: .drop, limit: 1))
        let reply = try await onThread { try fixture.client(timeout: .milliseconds(400), tries: 3).request(service: "retry.me", body: frames("once")) }
        #expect(reply == frames("once"))
        #expect(fixture.broker.statistics.faultDropped == 1)
        #expect(worker.served.load(ordering: .relaxed) >= 1)
    }

    @Test func clientGivesUpWithAClearError() async throws {
        let fixture = try BrokerFixture()
        defer { fixture.broker.stop() }
        do {
            _ = try await onThread { try fixture.client(timeout: .milliseconds(150), tries: 2).request(service: "vm.signin", body: frames("x")) }
            Issue.record("a request to a service without workers got a reply")
        } catch let error as MajordomoClientError {
            #expect(error.description == "no reply from service vm.signin at \(fixture.endpoint) after 2 tries over 300 ms; is a worker for it running? try `flowbus ps`")
        }
    }

    @Test func dropRuleOnVmPrefixSwitchedOnAndOff() async throws {
        let faults = FaultRules(seed: 42)
        let fixture = try BrokerFixture(faults: faults)
        defer { fixture.broker.stop() }
        let vm = fixture.worker("vm.home")
        let other = fixture.worker("clock")
        defer { vm.stop(); other.stop() }
        #expect(try await fixture.awaitWorkers("vm.home", count: 1))
        #expect(try await fixture.awaitWorkers("clock", count: 1))
        try faults.install(FaultRule(id: "half-vm", scope: .service, prefix: "vm.", action: .drop, share: 0.5))

        let (vmReplies, otherReplies) = try await onThread {
            let client = try fixture.client()
            for _ in 0..<400 { try client.send(service: "vm.home", body: frames("v")) }
            for _ in 0..<200 { try client.send(service: "clock", body: frames("c")) }
            var counts = ["vm.home": 0, "clock": 0]
            // Done when the broker has seen all 600 and every one not dropped has come back.
            func complete() -> Bool {
                let statistics = fixture.broker.statistics
                return statistics.requests == 600 && counts.values.reduce(0, +) == 600 - statistics.faultDropped
            }
            let deadline = ContinuousClock.now + .seconds(20)
            while ContinuousClock.now < deadline {
                if let reply = try client.receive(timeout: .milliseconds(100)) {
                    counts[reply.service, default: 0] += 1
                } else if complete() {
                    break
                }
            }
            return (counts["vm.home"]!, counts["clock"]!)
        }
        let dropped = fixture.broker.statistics.faultDropped
        #expect(otherReplies == 200)
        #expect((140...260).contains(vmReplies), "vm replies: \(vmReplies)")
        #expect(dropped == 400 - vmReplies)
        let status = try #require(faults.status.first)
        #expect(status.matched == 400 && status.fired == dropped)

        faults.remove(id: "half-vm")
        let afterwards = try await onThread {
            let client = try fixture.client()
            for _ in 0..<100 { try client.send(service: "vm.home", body: frames("v")) }
            var received = 0
            while received < 100, try client.receive(timeout: .seconds(3)) != nil { received += 1 }
            return received
        }
        #expect(afterwards == 100)
        #expect(fixture.broker.statistics.faultDropped == dropped)
    }

    @Test func oversizeRequestIsCountedAndRejected() async throws {
        var configuration = fastBrokerConfiguration()
        configuration.maxMessageBytes = 1000
        configuration.rejectionReply = { [Array("\($0.reason.rawValue)".utf8)] }
        let fixture = try BrokerFixture(configuration: configuration)
        defer { fixture.broker.stop() }
        let worker = fixture.worker("big")
        defer { worker.stop() }
        #expect(try await fixture.awaitWorkers("big", count: 1))
        let replies = try await onThread {
            let client = try fixture.client()
            return [
                try client.request(service: "big", body: [[UInt8](repeating: 7, count: 5000)]),
                try client.request(service: "big", body: Array(repeating: [1], count: 300)),  // too many frames
                try client.request(service: "big", body: [[UInt8](repeating: 7, count: 900)]),  // fits
            ]
        }
        #expect(replies[0] == frames("oversize"))
        #expect(replies[1] == frames("oversize"))
        #expect(replies[2] == [[UInt8](repeating: 7, count: 900)])
        let statistics = fixture.broker.statistics
        #expect(statistics.badInput.oversize == 2)
        #expect(statistics.rejections.oversize == 2)
        #expect(worker.served.load(ordering: .relaxed) == 1)
    }

    @Test func oversizeReplyIsReplacedAndTheWorkerKeepsServing() async throws {
        var configuration = fastBrokerConfiguration()
        configuration.maxMessageBytes = 1000
        configuration.rejectionReply = { [Array("\($0.reason.rawValue)".utf8)] }
        let fixture = try BrokerFixture(configuration: configuration)
        defer { fixture.broker.stop() }
        let worker = fixture.worker("bloat") { request in
            request.body == frames("big") ? [[UInt8](repeating: 1, count: 4000)] : request.body
        }
        defer { worker.stop() }
        #expect(try await fixture.awaitWorkers("bloat", count: 1))
        let replies = try await onThread {
            let client = try fixture.client()
            return [try client.request(service: "bloat", body: frames("big")), try client.request(service: "bloat", body: frames("small"))]
        }
        #expect(replies == [frames("oversizeReply"), frames("small")])
        #expect(fixture.broker.statistics.rejections.oversizeReply == 1)
    }
}

/// The other fault kinds on the broker's request path, each seen by a real worker.
@Suite("Broker fault kinds")
struct BrokerFaultKindTests {
    /// The bodies a worker received, in order.
    final class Received: Sendable {
        let bodies = Mutex<[[UInt8]]>([])
        func handler(_ request: MajordomoRequest) -> [Frame] {
            bodies.withLock { $0.append(request.body.first ?? []) }
            return request.body
        }
    }

    @Test func aDelayedRequestArrivesLateAndOthersPassIt() async throws {
        let faults = FaultRules()
        let fixture = try BrokerFixture(faults: faults)
        defer { fixture.broker.stop() }
        let received = Received()
        let worker = fixture.worker("slow.one") { received.handler($0) }
        defer { worker.stop() }
        #expect(try await fixture.awaitWorkers("slow.one", count: 1))
        try faults.install(FaultRule(id: "late", scope: .service, prefix: "slow.", action: .delay(FaultDelay(base: 300)), limit: 1))
        let elapsed = try await onThread { () -> Duration in
            let client = try fixture.client()
            let start = ContinuousClock.now
            try client.send(service: "slow.one", body: frames("first"))
            try client.send(service: "slow.one", body: frames("second"))
            var replies = 0
            while replies < 2, try client.receive(timeout: .seconds(3)) != nil { replies += 1 }
            return ContinuousClock.now - start
        }
        #expect(elapsed >= .milliseconds(300))
        #expect(received.bodies.withLock { $0 } == [Array("second".utf8), Array("first".utf8)])
        #expect(fixture.broker.statistics.faults.delayed == 1)
    }

    @Test func aDuplicatedRequestReachesTheWorkerTwice() async throws {
        let faults = FaultRules()
        let fixture = try BrokerFixture(faults: faults)
        defer { fixture.broker.stop() }
        let received = Received()
        let worker = fixture.worker("dup.one") { received.handler($0) }
        defer { worker.stop() }
        #expect(try await fixture.awaitWorkers("dup.one", count: 1))
        try faults.install(FaultRule(id: "twice", scope: .service, prefix: "dup.", action: .duplicate(copies: 2)))
        _ = try await onThread { try fixture.client().request(service: "dup.one", body: frames("hello")) }
        #expect(try await eventually { received.bodies.withLock { $0.count } == 3 })
        #expect(fixture.broker.statistics.faults.duplicated == 1)
    }

    /// MDP's client has no request id: the second answer to a duplicated request would be taken
    /// for the answer to the next one unless the client can tell them apart (`accepts`).
    @Test func theSecondAnswerToADuplicatedRequestDoesNotAnswerTheNextOne() async throws {
        let faults = FaultRules()
        let fixture = try BrokerFixture(faults: faults)
        defer { fixture.broker.stop() }
        let worker = fixture.worker("dup.two") { request in
            Thread.sleep(forTimeInterval: 0.02)
            return request.body
        }
        defer { worker.stop() }
        #expect(try await fixture.awaitWorkers("dup.two", count: 1))
        try faults.install(FaultRule(id: "twice", scope: .service, prefix: "dup.", action: .duplicate(copies: 1), limit: 1))
        let (first, second, strays) = try await onThread {
            let client = try fixture.client()
            let first = try client.request(service: "dup.two", body: frames("k1")) { $0 == frames("k1") }
            let second = try client.request(service: "dup.two", body: frames("k2")) { $0 == frames("k2") }
            return (first, second, client.strayReplies)
        }
        #expect(first == frames("k1") && second == frames("k2"))
        #expect(strays == 1, "the duplicate's answer came while the client waited for k2 and was dropped")
    }

    @Test func reorderedRequestsAreOvertakenWithinTheWindow() async throws {
        let faults = FaultRules(seed: 5)
        let fixture = try BrokerFixture(faults: faults)
        defer { fixture.broker.stop() }
        let received = Received()
        let worker = fixture.worker("seq.one") { received.handler($0) }
        defer { worker.stop() }
        #expect(try await fixture.awaitWorkers("seq.one", count: 1))
        try faults.install(FaultRule(id: "shuffle", scope: .service, prefix: "seq.", action: .reorder(window: 3), share: 0.3))
        try await onThread {
            let client = try fixture.client()
            for index in 0..<60 { try client.send(service: "seq.one", body: [[UInt8(index)]]) }
            var replies = 0
            while replies < 60, try client.receive(timeout: .seconds(3)) != nil { replies += 1 }
        }
        let order = received.bodies.withLock { $0.map { Int($0.first ?? 255) } }
        #expect(Set(order) == Set(0..<60), "every request arrives once: \(order)")
        #expect(order != Array(0..<60), "some were reordered")
        let reordered = fixture.broker.statistics.faults.reordered
        #expect(reordered > 0)
        // A held request is overtaken by at most its window of later ones.
        for (position, value) in order.enumerated() {
            #expect(position - value <= 3, "request \(value) arrived \(position - value) places late: \(order)")
        }
    }

    @Test func aCorruptedRequestReachesTheWorkerChangedAndATruncatedOneCut() async throws {
        let faults = FaultRules()
        let fixture = try BrokerFixture(faults: faults)
        defer { fixture.broker.stop() }
        let received = Received()
        let worker = fixture.worker("bits.one") { received.handler($0) }
        defer { worker.stop() }
        #expect(try await fixture.awaitWorkers("bits.one", count: 1))
        let body = Array(repeating: UInt8(ascii: "a"), count: 32)
        try faults.install(FaultRule(id: "flip", scope: .service, prefix: "bits.", action: .corrupt(bytes: 4), limit: 1))
        _ = try await onThread { try fixture.client().request(service: "bits.one", body: [body]) }
        try faults.install(FaultRule(id: "flip", scope: .service, prefix: "bits.", action: .truncate(bytes: 5), limit: 1))
        _ = try await onThread { try fixture.client().request(service: "bits.one", body: [body]) }
        let seen = received.bodies.withLock { $0 }
        #expect(seen.count == 2 && seen[0].count == 32 && seen[0] != body && seen[1] == Array(body.prefix(5)))
        #expect(fixture.broker.statistics.faults.damaged == 2)
    }

    /// A worker that can tell damage (here: any body but the one sent) answers with the agreed
    /// frame; the client sends the request again at once, on the same socket, without using up
    /// a try, and returns the real answer. Past a try's resends it uses its next try; past the
    /// last one's, it returns the damage answer itself.
    @Test func aClientSendsARequestAnsweredDamagedAgainAtOnce() async throws {
        let faults = FaultRules()
        let fixture = try BrokerFixture(faults: faults)
        defer { fixture.broker.stop() }
        let body = Array(repeating: UInt8(ascii: "a"), count: 32)
        let damaged = frames("DAMAGED")
        let worker = fixture.worker("bits.check") { $0.body == [body] ? $0.body : damaged }
        defer { worker.stop() }
        #expect(try await fixture.awaitWorkers("bits.check", count: 1))
        try faults.install(FaultRule(id: "flip", scope: .service, prefix: "bits.", action: .corrupt(bytes: 1), limit: 1))
        let (reply, resent, last) = try await onThread {
            var configuration = ClientConfiguration(timeout: .seconds(5), tries: 1)
            configuration.resendWhenAnswered = damaged[0]
            configuration.damagedResends = 3
            let client = try MajordomoClient(context: fixture.context, endpoint: fixture.endpoint, configuration: configuration, logger: quietLogger)
            let reply = try client.request(service: "bits.check", body: [body])
            try faults.install(FaultRule(id: "flip", scope: .service, prefix: "bits.", action: .truncate(bytes: 3)))
            let last = try client.request(service: "bits.check", body: [body])
            return (reply, client.damagedResent, last)
        }
        #expect(reply == [body])
        #expect(resent == 4, "one resend for the first request, three for the second")
        #expect(last == damaged)
        #expect(fixture.broker.statistics.faults.damaged == 5)
        // With two tries, the second try gets three resends of its own before the answer is given up on.
        let (twoTries, resentAgain) = try await onThread {
            var configuration = ClientConfiguration(timeout: .seconds(5), tries: 2)
            configuration.resendWhenAnswered = damaged[0]
            configuration.damagedResends = 3
            let client = try MajordomoClient(context: fixture.context, endpoint: fixture.endpoint, configuration: configuration, logger: quietLogger)
            return (try client.request(service: "bits.check", body: [body]), client.damagedResent)
        }
        #expect(twoTries == damaged)
        #expect(resentAgain == 7, "three resends, the second try, three more")
        #expect(fixture.broker.statistics.faults.damaged == 13)
    }

    /// A worker that answers "applied, not stored yet" (here: to the first two requests) makes
    /// the client ask again at once, each time as a try; the real answer is returned, and with
    /// no try left the "not stored" answer itself.
    @Test func aClientAsksAgainWhenTheWorkerHasNotStoredItsAnswer() async throws {
        let fixture = try BrokerFixture()
        defer { fixture.broker.stop() }
        let unsettled = frames("UNSETTLED")
        let seen = Atomic<Int>(0)
        let worker = fixture.worker("store.one") { request in
            seen.add(1, ordering: .relaxed).newValue <= 2 ? unsettled : request.body
        }
        defer { worker.stop() }
        #expect(try await fixture.awaitWorkers("store.one", count: 1))
        let (reply, retried, last) = try await onThread {
            var configuration = ClientConfiguration(timeout: .seconds(5), tries: 3)
            configuration.retryWhenAnswered = unsettled[0]
            let client = try MajordomoClient(context: fixture.context, endpoint: fixture.endpoint, configuration: configuration, logger: quietLogger)
            let reply = try client.request(service: "store.one", body: frames("first"))
            seen.store(0, ordering: .relaxed)
            let last = try client.request(service: "store.one", body: frames("second"), tries: 2)
            return (reply, client.retriedWhenAnswered, last)
        }
        #expect(reply == frames("first"))
        #expect(retried == 3, "two retries for the first request, one (its last try) for the second")
        #expect(last == unsettled)
    }

    @Test func heldHeartbeatsMakeTheBrokerExpireALiveWorker() async throws {
        let faults = FaultRules()
        let fixture = try BrokerFixture(faults: faults)
        defer { fixture.broker.stop() }
        let worker = fixture.worker("beat.one")
        defer { worker.stop() }
        #expect(try await fixture.awaitWorkers("beat.one", count: 1))
        try faults.install(FaultRule(id: "mute", scope: .heartbeat, prefix: "beat.", action: .drop))
        #expect(try await eventually(timeout: .seconds(5)) { fixture.broker.statistics.workersExpired >= 1 })
        #expect(fixture.broker.statistics.faults.heartbeatsHeld >= 1)
        // Released, the worker registers again and serves.
        faults.remove(id: "mute")
        #expect(try await fixture.awaitWorkers("beat.one", count: 1))
        #expect(try await onThread { try fixture.client(timeout: .seconds(3)).request(service: "beat.one", body: frames("ok")) } == frames("ok"))
        // Its first heartbeat after the expiry was met with DISCONNECT, and is no bad input.
        #expect(fixture.broker.statistics.expiredWorkersHeard >= 1)
        #expect(fixture.broker.statistics.badInput.total == 0, "\(fixture.broker.statistics.badInput)")
    }
}
