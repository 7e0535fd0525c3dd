import Foundation
import Logging
import Majordomo
import MessagePath
import Synchronization
import Testing
import ZeroMQ

@Suite("Broker liveness")
struct BrokerLivenessTests {
    @Test func silentWorkerIsRemovedAndMMISays404() async throws {
        let fixture = try BrokerFixture()
        defer { fixture.broker.stop() }
        let (registered, removed, answer) = try await onThread {
            let ghost = try RawPeer(context: fixture.context, endpoint: fixture.endpoint, routingID: "ghost/1/1")
            try ghost.send(.ready(service: Array("vm.ghost".utf8)))
            let registered = waitUntil { fixture.broker.statistics.workersPerService["vm.ghost"] == 1 }
            // It never sends HEARTBEAT: after liveness × interval (1 s) the broker forgets it.
            let removed = waitUntil { fixture.broker.statistics.workersPerService["vm.ghost"] == nil }
            let answer = try fixture.client().request(service: "mmi.service", body: frames("vm.ghost"))
            return (registered, removed, answer)
        }
        #expect(registered && removed)
        #expect(answer == frames("404"))
        #expect(fixture.broker.statistics.workersExpired == 1)
        #expect(fixture.broker.workers.isEmpty)
    }

    /// A worker taken for dead that speaks again is the usual end of an expiry (its heartbeats
    /// were late, not it): it is told to reconnect and is not counted as bad input. A peer that
    /// never registered and sends HEARTBEAT is.
    @Test func anExpiredWorkerHeardFromAgainIsToldToReconnectWithoutABadInputCount() async throws {
        let fixture = try BrokerFixture()
        defer { fixture.broker.stop() }
        let (expired, toldExpired, toldStranger) = try await onThread {
            let ghost = try RawPeer(context: fixture.context, endpoint: fixture.endpoint, routingID: "ghost/1/1")
            try ghost.send(.ready(service: Array("vm.ghost".utf8)))
            _ = waitUntil { fixture.broker.statistics.workersPerService["vm.ghost"] == 1 }
            let expired = waitUntil { fixture.broker.statistics.workersExpired == 1 }
            try ghost.send(.heartbeat)
            let toldExpired = try ghost.receiveCommand(timeout: .seconds(2))
            let stranger = try RawPeer(context: fixture.context, endpoint: fixture.endpoint, routingID: "stranger/1/1")
            try stranger.send(.heartbeat)
            let toldStranger = try stranger.receiveCommand(timeout: .seconds(2))
            return (expired, toldExpired, toldStranger)
        }
        #expect(expired)
        #expect(toldExpired == .disconnect && toldStranger == .disconnect)
        // Counters are published on the broker's tick.
        #expect(try await eventually(timeout: .seconds(3)) { fixture.broker.statistics.badInput.unexpectedCommand == 1 })
        let statistics = fixture.broker.statistics
        #expect(statistics.expiredWorkersHeard == 1, "\(statistics)")
        #expect(statistics.badInput.unexpectedCommand == 1, "only the stranger's HEARTBEAT is bad input: \(statistics.badInput)")
    }

    /// A broker that forgets a worker after 3 × 100 ms of silence.
    static func shortLiveness() throws -> (BrokerFixture, BrokerConfiguration) {
        var configuration = fastBrokerConfiguration()
        configuration.heartbeatLiveness = 3
        return (try BrokerFixture(configuration: configuration), configuration)
    }

    /// Liveness here is 3 × 100 ms: a handler of 1.5 s used to outlast it, so the broker expired
    /// the worker mid-request and a slow service looked like a dead one.
    @Test func busyWorkerKeepsHeartbeating() async throws {
        let (fixture, brokerConfiguration) = try Self.shortLiveness()
        defer { fixture.broker.stop() }
        var workerConfiguration = fastWorkerConfiguration()
        workerConfiguration.heartbeatLiveness = brokerConfiguration.heartbeatLiveness
        let worker = fixture.worker("slow", configuration: workerConfiguration) { request in
            Thread.sleep(forTimeInterval: 1.5)
            return request.body
        }
        defer { worker.stop() }
        #expect(try await fixture.awaitWorkers("slow", count: 1))
        let reply = try await onThread { try fixture.client(timeout: .seconds(5)).request(service: "slow", body: frames("take your time")) }
        #expect(reply == frames("take your time"))
        #expect(fixture.broker.statistics.workersExpired == 0)
        #expect(worker.connections.load(ordering: .relaxed) == 1, "the worker reconnected: its broker went silent on it")
    }

    /// Past `busyLimit` a handler is taken for hung: the heartbeats stop and the broker expires the
    /// worker, which is what lets the host's supervisor see the process as silent.
    @Test func hungHandlerStopsHeartbeating() async throws {
        let (fixture, brokerConfiguration) = try Self.shortLiveness()
        defer { fixture.broker.stop() }
        var workerConfiguration = fastWorkerConfiguration()
        workerConfiguration.heartbeatLiveness = brokerConfiguration.heartbeatLiveness
        workerConfiguration.busyLimit = .milliseconds(300)
        let worker = fixture.worker("stuck", configuration: workerConfiguration) { request in
            Thread.sleep(forTimeInterval: 2)
            return request.body
        }
        defer { worker.stop() }
        #expect(try await fixture.awaitWorkers("stuck", count: 1))
        _ = try? await onThread { try fixture.client(timeout: .milliseconds(200)).request(service: "stuck", body: frames("hello")) }
        #expect(try await eventually(timeout: .seconds(3)) { fixture.broker.statistics.workersExpired == 1 })
    }

    @Test func idleWorkerGetsHeartbeats() async throws {
        let fixture = try BrokerFixture()
        defer { fixture.broker.stop() }
        let received = try await onThread {
            let peer = try RawPeer(context: fixture.context, endpoint: fixture.endpoint)
            try peer.send(.ready(service: Array("beat".utf8)))
            guard let frames = try peer.receive(timeout: .seconds(2)) else { return nil as MDPCommand? }
            return try MDPCommand.decode(frames, direction: .fromBroker)
        }
        #expect(received == .heartbeat)
    }

    @Test func unexpectedCommandsAreAnsweredWithDisconnect() async throws {
        let fixture = try BrokerFixture()
        defer { fixture.broker.stop() }
        let answers = try await onThread {
            let peer = try RawPeer(context: fixture.context, endpoint: fixture.endpoint)
            var answers: [MDPCommand?] = []
            try peer.send(.heartbeat)  // before READY
            answers.append(try peer.receiveCommand(timeout: .seconds(2)))
            try peer.send(.reply(client: [1, 2, 3], body: [[]]))  // REPLY from a peer that never sent READY
            answers.append(try peer.receiveCommand(timeout: .seconds(2)))
            try peer.send(.ready(service: Array("twice".utf8)))
            try peer.send(.ready(service: Array("twice".utf8)))  // a second READY
            answers.append(try peer.receiveCommand(timeout: .seconds(2)))
            try peer.send(.ready(service: Array("mmi.mine".utf8)))  // mmi.* belongs to the broker
            answers.append(try peer.receiveCommand(timeout: .seconds(2)))
            return answers
        }
        #expect(answers == [.disconnect, .disconnect, .disconnect, .disconnect])
        let statistics = fixture.broker.statistics
        #expect(statistics.badInput.unexpectedCommand == 4)
        #expect(statistics.workersPerService["twice"] == nil)
    }

    @Test func workerReconnectsAfterBrokerRestart() async throws {
        let context = try ZMQContext()
        let endpoint = ipcEndpoint()
        let first = try MajordomoBroker.start(context: context, configuration: fastBrokerConfiguration(), endpoints: [endpoint], logger: quietLogger)
        let worker = WorkerRunner(context: context, endpoint: endpoint, service: "phoenix")
        defer { worker.stop() }
        #expect(try await eventually { first.statistics.workersPerService["phoenix"] == 1 })
        first.stop()
        let second = try MajordomoBroker.start(context: context, configuration: fastBrokerConfiguration(), endpoints: [endpoint], logger: quietLogger)
        defer { second.stop() }
        #expect(try await eventually { second.statistics.workersPerService["phoenix"] == 1 })
        #expect(try await eventually { worker.connections.load(ordering: .relaxed) >= 2 })
        let reply = try await onThread {
            try MajordomoClient(context: context, endpoint: endpoint, configuration: ClientConfiguration(timeout: .seconds(2), tries: 1), logger: quietLogger)
                .request(service: "phoenix", body: frames("again"))
        }
        #expect(reply == frames("again"))
    }

    @Test func workerReconnectsWhenBrokerGoesSilent() async throws {
        // A "broker" that accepts the READY and then never speaks: the worker must give up on it and come back.
        let context = try ZMQContext()
        let endpoint = ipcEndpoint()
        let readies = try await onThread {
            let router = try ZMQSocket(context: context, type: .router, linger: .zero)
            try router.bind(endpoint)
            let worker = WorkerRunner(context: context, endpoint: endpoint, service: "lonely")
            defer { worker.stop() }
            try router.setReceiveTimeout(.seconds(5))
            var readies = 0
            while readies < 2, let message = try router.receiveMessage() {
                if case .ready = try MDPCommand.decode(Array(message.dropFirst()), direction: .toBroker) { readies += 1 }
            }
            return readies
        }
        #expect(readies == 2)
    }

    @Test func workerDisconnectRemovesItAtOnce() async throws {
        let fixture = try BrokerFixture()
        defer { fixture.broker.stop() }
        let worker = fixture.worker("brief")
        #expect(try await fixture.awaitWorkers("brief", count: 1))
        worker.stop()
        // Removed by its DISCONNECT, not by expiry (which the counters would show).
        #expect(try await eventually { fixture.broker.statistics.workersPerService["brief"] == nil })
        #expect(fixture.broker.statistics.workersDisconnected == 1)
        #expect(fixture.broker.statistics.workersExpired == 0)
    }

    /// A worker whose connection closes without a DISCONNECT (a crash) is removed at the broker's
    /// next heartbeat to it, which finds it unroutable, long before its silence would expire it.
    @Test func aWorkerGoneWithoutDisconnectIsExpiredAtTheNextHeartbeat() async throws {
        let fixture = try BrokerFixture(configuration: fastBrokerConfiguration(
            heartbeat: .milliseconds(20), liveness: 1_000, tick: .milliseconds(5)))
        defer { fixture.broker.stop() }
        let (registered, removed) = try await onThread {
            var ghost: RawPeer? = try RawPeer(context: fixture.context, endpoint: fixture.endpoint, routingID: "ghost/1/1")
            try ghost?.send(.ready(service: Array("vm.ghost".utf8)))
            let registered = waitUntil { fixture.broker.statistics.workersPerService["vm.ghost"] == 1 }
            ghost = nil
            // Silence alone would take 1,000 × 20 ms = 20 s.
            let removed = waitUntil(timeout: .seconds(3)) { fixture.broker.statistics.workersPerService["vm.ghost"] == nil }
            return (registered, removed)
        }
        #expect(registered && removed)
        let statistics = fixture.broker.statistics
        #expect(statistics.workersExpired == 1)
        #expect(statistics.workersDisconnected == 0)
        #expect(statistics.unroutable >= 1)
    }

    /// A worker's DISCONNECT is read before the broker calls it dead for being unroutable. Once a
    /// worker's connection closes, the broker cannot send to it, and its heartbeat says so; the
    /// DISCONNECT that came before the close may still wait unread in the socket. Here 600
    /// workers go one after another, five times, while the broker heartbeats them every few
    /// ticks, so some close while a tick runs. Before the broker read the socket first, 3 runs
    /// in 6 counted 1 to 6 of the 3,000 expired.
    @Test func workersThatSayDisconnectAreNeverCountedExpired() async throws {
        let fixture = try BrokerFixture(configuration: fastBrokerConfiguration(
            heartbeat: .milliseconds(10), liveness: 3_000, tick: .milliseconds(2)))
        defer { fixture.broker.stop() }
        let count = 600
        let rounds = 5
        let statistics = try await onThread {
            for round in 0..<rounds {
                var peers: [RawPeer] = []
                peers.reserveCapacity(count)
                for index in 0..<count {
                    let peer = try RawPeer(context: fixture.context, endpoint: fixture.endpoint, routingID: "brief/\(round)-\(index)/1")
                    try peer.send(.ready(service: Array("vm.brief".utf8)))
                    peers.append(peer)
                }
                guard waitUntil(timeout: .seconds(20), { fixture.broker.statistics.workersPerService["vm.brief"] == count }) else { break }
                // One at a time, so the closes fall across many ticks.
                while let peer = peers.popLast() {
                    try peer.send(.disconnect)
                    try peer.socket.setLinger(.seconds(1))
                    usleep(100)
                }
                guard waitUntil(timeout: .seconds(20), { fixture.broker.statistics.workersPerService["vm.brief"] == nil }) else { break }
            }
            return fixture.broker.statistics
        }
        #expect(statistics.workersPerService["vm.brief"] == nil, "\(statistics)")
        #expect(statistics.workersDisconnected == count * rounds)
        #expect(statistics.workersExpired == 0)
    }
}
