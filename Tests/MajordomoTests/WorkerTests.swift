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
