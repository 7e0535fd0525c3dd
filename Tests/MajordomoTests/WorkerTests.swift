import Foundation
import Majordomo
import MessagePath
import Testing
import ZeroMQ

@Suite("Worker")
struct WorkerTests {
    /// A ROUTER plays the broker: the worker must send READY, then HEARTBEATs on its own,
    /// and after a DISCONNECT come back on a new connection with READY.
    @Test func heartbeatsAndReconnectOnDisconnect() async throws {
        let context = try ZMQContext()
        let endpoint = ipcEndpoint()
        let seen = try await onThread {
            let router = try ZMQSocket(context: context, type: .router, linger: .zero)
            try router.bind(endpoint)
            try router.setReceiveTimeout(.seconds(5))
            let worker = WorkerRunner(context: context, endpoint: endpoint, service: "beats", configuration: fastWorkerConfiguration(routingID: "beats/7/1"))
            defer { worker.stop() }
            var seen: [MDPCommand] = []
            while seen.count < 4, let message = try router.receiveMessage() {
                let (peer, command) = try MDPCommand.decode(routed: message)
                guard peer == Array("beats/7/1".utf8) else { continue }
                seen.append(command)
                if seen.count == 3 { try router.send(prefix: [peer], MDPCommand.disconnect.frames) }
            }
            return seen
        }
        let ready = MDPCommand.ready(service: Array("beats".utf8))
        #expect(seen == [ready, .heartbeat, .heartbeat, ready])
    }

    /// A worker that hands requests to other threads watches a wake-up pipe: `receive` returns
    /// as soon as it is signalled, before and after a DISCONNECT made the worker start over.
    @Test func wakeUpEndsAReceiveEvenAfterAReconnect() async throws {
        let context = try ZMQContext()
        let endpoint = ipcEndpoint()
        let (before, after, readyAgain) = try await onThread {
            let router = try ZMQSocket(context: context, type: .router, linger: .zero)
            try router.bind(endpoint)
            try router.setReceiveTimeout(.seconds(5))
            let worker = try MajordomoWorker(context: context, endpoint: endpoint, service: "woken",
                                             configuration: fastWorkerConfiguration(routingID: "woken/1/1"), logger: quietLogger)
            defer { worker.disconnect() }
            let wake = try WakeSignal()
            worker.watch(wake)
            guard let first = try router.receiveMessage() else { return (false, false, false) }
            let (peer, _) = try MDPCommand.decode(routed: first)
            func woken() throws -> Bool {
                wake.wake()
                let started = ContinuousClock.now
                let request = try worker.receive(timeout: .seconds(3))
                return request == nil && ContinuousClock.now - started < .seconds(2)
            }
            let before = try woken()
            try router.send(prefix: [peer], MDPCommand.disconnect.frames)
            // The worker reads the DISCONNECT, waits its backoff and sends READY on a new connection.
            var readyAgain = false
            let deadline = ContinuousClock.now + .seconds(5)
            while !readyAgain && ContinuousClock.now < deadline {
                _ = try worker.receive(timeout: .milliseconds(50))
                while let message = try router.receiveMessage(dontWait: true) {
                    if case .ready = try MDPCommand.decode(routed: message).1 { readyAgain = true }
                }
            }
            return (before, try woken(), readyAgain)
        }
        #expect(before && after && readyAgain)
    }

    @Test func lowLevelReceiveAndReply() async throws {
        let fixture = try BrokerFixture()
        defer { fixture.broker.stop() }
        let pending = Task {
            try await onThread { try fixture.client(timeout: .seconds(5)).request(service: "manual", body: frames("2", "3")) }
        }
        let served = try await onThread {
            let worker = try MajordomoWorker(context: fixture.context, endpoint: fixture.endpoint, service: "manual",
                                             configuration: fastWorkerConfiguration(), logger: quietLogger)
            defer { worker.disconnect() }
            guard let request = try worker.receive(timeout: .seconds(5)) else { return nil as MajordomoRequest? }
            let product = request.body.map { Int(text($0))! }.reduce(1, *)
            worker.reply(to: request, body: [Array("\(product)".utf8)])
            return request
        }
        #expect(served?.service == "manual")
        #expect(served?.body == frames("2", "3"))
        #expect(try await pending.value == frames("6"))
    }

    /// A DISCONNECT already on the socket when `receive` starts is read before any poll: the worker
    /// then reconnects after its backoff within that same call, instead of waiting out a poll
    /// with no socket in it (up to a heartbeat interval, here longer than the call).
    @Test func aDisconnectWaitingOnTheSocketReconnectsWithinTheReceive() async throws {
        let context = try ZMQContext()
        let endpoint = ipcEndpoint()
        let (connections, readyAgain) = try await onThread { () throws -> (Int, Bool) in
            let router = try ZMQSocket(context: context, type: .router, linger: .zero)
            try router.bind(endpoint)
            try router.setReceiveTimeout(.seconds(5))
            var configuration = fastWorkerConfiguration()
            configuration.heartbeatInterval = .seconds(10)
            let worker = try MajordomoWorker(context: context, endpoint: endpoint, service: "dropped",
                                             configuration: configuration, logger: quietLogger)
            defer { worker.disconnect() }
            guard let first = try router.receiveMessage() else { return (0, false) }
            let (peer, _) = try MDPCommand.decode(routed: first)
            try router.send(prefix: [peer], MDPCommand.disconnect.frames)
            Thread.sleep(forTimeInterval: 0.3)
            _ = try worker.receive(timeout: .seconds(2))
            var readyAgain = false
            while let message = try router.receiveMessage(dontWait: true) {
                if case .ready = try MDPCommand.decode(routed: message).1 { readyAgain = true }
            }
            return (worker.connections, readyAgain)
        }
        #expect(connections == 2)
        #expect(readyAgain)
    }

    /// A worker with credit gets its requests in batches: those already on its socket are handed
    /// out without a poll each (a poll would find the socket ready and still make a system call).
    @Test func requestsAlreadyOnTheSocketAreTakenWithoutAPollEach() async throws {
        let fixture = try BrokerFixture()
        defer { fixture.broker.stop() }
        let count = 32
        let outcome = try await onThread { () throws -> (received: [String], polls: Int, replies: Int) in
            var configuration = fastWorkerConfiguration()
            configuration.credit = count
            let worker = try MajordomoWorker(context: fixture.context, endpoint: fixture.endpoint, service: "batch",
                                             configuration: configuration, logger: quietLogger)
            defer { worker.disconnect() }
            guard waitUntil({ fixture.broker.statistics.workersPerService["batch"] == 1 }) else { return ([], 0, 0) }
            let client = try fixture.client()
            for index in 0..<count { try client.send(service: "batch", body: frames("b\(index)")) }
            // All of them sent on to the worker, and given time to cross the connection.
            guard waitUntil({ fixture.broker.statistics.dispatched == count }) else { return ([], 0, 0) }
            Thread.sleep(forTimeInterval: 0.3)
            let before = worker.polls
            var requests: [MajordomoRequest] = []
            while requests.count < count, let request = try worker.receive(timeout: .seconds(2)) { requests.append(request) }
            let polls = worker.polls - before
            for request in requests { worker.reply(to: request, body: request.body) }
            var replies = 0
            while replies < count, try client.receive(timeout: .seconds(2)) != nil { replies += 1 }
            return (requests.map { text($0.body[0]) }, polls, replies)
        }
        #expect(outcome.received == (0..<count).map { "b\($0)" })
        // One poll a request before: 32. A batch that arrives late may still need one each.
        #expect(outcome.polls <= 4, "\(outcome.polls) polls for \(count) requests already on the socket")
        #expect(outcome.replies == count)
    }

    @Test func invalidServiceNamesAreRefused() throws {
        let context = try ZMQContext()
        #expect(throws: MajordomoWorkerError.self) {
            _ = try MajordomoWorker(context: context, endpoint: ipcEndpoint(), service: "mmi.service", logger: quietLogger)
        }
        #expect(throws: MajordomoWorkerError.self) {
            _ = try MajordomoWorker(context: context, endpoint: ipcEndpoint(), service: "", logger: quietLogger)
        }
    }
}
