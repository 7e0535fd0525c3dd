import Majordomo
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
