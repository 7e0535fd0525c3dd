import FlowbusTesting
import Foundation
import Majordomo
import MessagePath
import Testing
import ZeroMQ

/// A closed broker tells the worker who asked (the ZAP handler's User-Id, `MDP.peerPrefix`), so a
/// worker can bound what one client holds; a client cannot pass itself off as another peer.
@Suite("Broker names the requester")
struct PeerStampTests {
    @Test func aClosedBrokerNamesEachRequesterAndAForgedNameIsMalformed() async throws {
        let context = try ZMQContext()
        // ipc peers are the host's plugins here, tcp peers clients at their address.
        let authenticator = ZAPAuthenticator(context: context) { request in
            request.ipcPeer != nil ? .admit(userID: PeerClass.plugin.userID("test")) : .admit(userID: PeerClass.client.userID(request.address))
        }
        try authenticator.start()
        defer { authenticator.stop() }
        var configuration = fastBrokerConfiguration()
        configuration.zapDomain = "flowbus"
        configuration.access = BusAccess(clientServicePrefixes: ["vm."])
        let ipc = "ipc://" + TestScratch.file("peer", suffix: ".ipc")
        let broker = try MajordomoBroker.start(
            context: context, configuration: configuration, endpoints: [ipc, "tcp://127.0.0.1:*"], logger: quietLogger)
        defer { broker.stop() }
        // The worker answers with the peer it was told and the body it got.
        let worker = WorkerRunner(context: context, endpoint: ipc, service: "vm.who") { request in
            [Array((request.peer ?? "nobody").utf8)] + request.body
        }
        defer { worker.stop() }
        let slow = WorkerRunner(context: context, endpoint: ipc, service: "vm.slow") { request in
            Thread.sleep(forTimeInterval: 0.05)
            return [Array((request.peer ?? "nobody").utf8)] + request.body
        }
        defer { slow.stop() }
        #expect(try await eventually { broker.statistics.workersPerService["vm.who"] == 1 && broker.statistics.workersPerService["vm.slow"] == 1 })

        func ask(_ endpoint: String, _ body: [Frame]) async throws -> [Frame] {
            try await onThread {
                try MajordomoClient(context: context, endpoint: endpoint, configuration: ClientConfiguration(timeout: .seconds(2), tries: 1),
                                    logger: quietLogger).request(service: "vm.who", body: body)
            }
        }
        #expect(try await ask(broker.endpoints[1], frames("hi")) == frames("client:127.0.0.1", "hi"))
        #expect(try await ask(ipc, frames("hi")) == frames("plugin:test", "hi"))
        // A client's own peer frame stays in the body, before the broker's: the worker sees two
        // body frames (a Flowbus worker answers MALFORMED), and the peer the broker named.
        let forged = try await ask(broker.endpoints[1], frames("hi", "X-Flowbus-Peer:plugin:coord-app"))
        #expect(forged == frames("client:127.0.0.1", "hi", "X-Flowbus-Peer:plugin:coord-app"))

        // Requests that wait for the worker (it takes one at a time, each for 50 ms) are named too.
        let replies = try await onThread {
            let client = try MajordomoClient(context: context, endpoint: broker.endpoints[1], logger: quietLogger)
            for index in 0..<3 { try client.send(service: "vm.slow", body: frames("q\(index)")) }
            return try (0..<3).map { _ in try client.receive(timeout: .seconds(3))?.body }
        }
        #expect(replies.compactMap { $0 }.sorted { text($0[1]) < text($1[1]) } == (0..<3).map { frames("client:127.0.0.1", "q\($0)") })
        #expect(try await eventually { broker.statistics.requests == 6 })
    }

    @Test func anOpenBrokerNamesNoOne() async throws {
        let fixture = try BrokerFixture()
        defer { fixture.broker.stop() }
        let worker = WorkerRunner(context: fixture.context, endpoint: fixture.endpoint, service: "vm.who") { request in
            [Array((request.peer ?? "nobody").utf8)] + request.body
        }
        defer { worker.stop() }
        #expect(try await eventually { fixture.broker.statistics.workersPerService["vm.who"] == 1 })
        let reply = try await onThread {
            try MajordomoClient(context: fixture.context, endpoint: fixture.endpoint, configuration: ClientConfiguration(timeout: .seconds(2), tries: 1),
                                logger: quietLogger).request(service: "vm.who", body: frames("hi"))
        }
        #expect(reply == frames("nobody", "hi"))
    }
}
