import Foundation
import Majordomo
import MessagePath
import Synchronization
import Testing
import ZeroMQ

/// Seeded, so a failing run can be replayed from the seed in its message.
struct FuzzRandom: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// One random message: mostly almost-valid MDP, bent in one place.
func fuzzMessage(_ random: inout FuzzRandom) -> [Frame] {
    func bytes(_ count: Int) -> Frame { (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) } }
    func smallFrame() -> Frame { bytes(Int.random(in: 0...24, using: &random)) }
    let header: Frame = switch Int.random(in: 0..<10, using: &random) {
    case 0..<4: MDP.workerHeader
    case 4..<7: MDP.clientHeader
    case 7: Array("MDPW02".utf8)
    case 8: []
    default: smallFrame()
    }
    let first: Frame = Int.random(in: 0..<8, using: &random) == 0 ? smallFrame() : []
    var message = [first, header]
    switch Int.random(in: 0..<8, using: &random) {
    case 0:  // a command byte, often valid, then a random tail
        message.append([UInt8.random(in: 0...7, using: &random)])
        for _ in 0..<Int.random(in: 0...5, using: &random) { message.append(smallFrame()) }
    case 1:  // a worker REQUEST/REPLY shape with a random delimiter
        message += [[UInt8.random(in: 2...3, using: &random)], smallFrame(), Int.random(in: 0..<2, using: &random) == 0 ? [] : [1], smallFrame()]
    case 2:  // a valid READY for a random service, then a REPLY nobody asked for
        message = MDPCommand.ready(service: Array("fz.".utf8) + bytes(4)).frames
    case 3:
        message = MDPCommand.reply(client: bytes(5), body: [smallFrame()]).frames
    case 4:  // a client request to a random service, sometimes mmi.*
        let service = Int.random(in: 0..<3, using: &random) == 0 ? Array("mmi.".utf8) + bytes(3) : Array("fz.".utf8) + bytes(3)
        message = MDPCommand.clientRequest(service: service, body: [smallFrame()]).frames
    case 5:  // many frames
        for _ in 0..<Int.random(in: 0...300, using: &random) { message.append(smallFrame()) }
    case 6:  // over the broker's 1 MiB limit, under the 4 MiB transport cap
        if Int.random(in: 0..<40, using: &random) == 0 {
            message = MDPCommand.clientRequest(service: Array("fz.big".utf8), body: [[UInt8](repeating: 0xAB, count: 1_200_000)]).frames
        }
    default:  // truncated: a prefix of a valid command
        let valid = MDPCommand.request(client: bytes(5), body: [smallFrame()]).frames
        message = Array(valid.prefix(Int.random(in: 1...5, using: &random)))
    }
    return message
}

@Suite("Broker fuzz")
struct BrokerFuzzTests {
    @Test func randomFramesNeverStopTheBroker() async throws {
        var configuration = BrokerConfiguration()
        configuration.heartbeatInterval = .milliseconds(100)
        configuration.heartbeatLiveness = 10
        configuration.requestExpiry = .milliseconds(300)
        configuration.statisticsInterval = .milliseconds(50)
        configuration.rejectionReply = { [Array($0.reason.rawValue.utf8)] }
        let fixture = try BrokerFixture(configuration: configuration)
        defer { fixture.broker.stop() }
        let seed = UInt64.random(in: 0...UInt64.max)
        let sent = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<4 {
                group.addTask {
                    try await onThread {
                        var random = FuzzRandom(state: seed &+ UInt64(index))
                        var peer = try RawPeer(context: fixture.context, endpoint: fixture.endpoint)
                        let until = ContinuousClock.now + .seconds(2)
                        var count = 0
                        while ContinuousClock.now < until {
                            let message = fuzzMessage(&random)
                            try peer.socket.send(message.isEmpty ? [[]] : message)
                            count += 1
                            while try peer.socket.receiveMessage(dontWait: true) != nil {}
                            // Now and then a fresh connection, as a crashing peer would make.
                            if count % 500 == 0 { peer = try RawPeer(context: fixture.context, endpoint: fixture.endpoint) }
                        }
                        return count
                    }
                }
            }
            return try await group.reduce(0, +)
        }

        #expect(fixture.broker.isRunning)
        let worker = fixture.worker("fuzz.echo")
        defer { worker.stop() }
        #expect(try await fixture.awaitWorkers("fuzz.echo", count: 1), "seed \(seed)")
        let replies = try await onThread {
            let client = try fixture.client(timeout: .seconds(3))
            return try (0..<20).map { try client.request(service: "fuzz.echo", body: [Array("n\($0)".utf8)]) }
        }
        #expect(replies == (0..<20).map { [Array("n\($0)".utf8)] }, "seed \(seed)")
        let bad = fixture.broker.statistics.badInput
        #expect(sent > 1000, "seed \(seed)")
        #expect(bad.malformedFrames > 0 && bad.wrongHeader > 0 && bad.unknownCommand > 0, "seed \(seed): \(bad)")
        #expect(bad.unexpectedCommand > 0 && bad.oversize > 0 && bad.unknownService > 0, "seed \(seed): \(bad)")
    }

    /// The probe's flood expired six healthy workers: their HEARTBEATs waited behind the flood
    /// in the broker's queue while it judged them silent. A worker is declared dead only once
    /// the broker has read everything that arrived.
    @Test func aFloodDoesNotExpireHealthyWorkers() async throws {
        var configuration = fastBrokerConfiguration()
        configuration.heartbeatLiveness = 3
        let fixture = try BrokerFixture(configuration: configuration)
        defer { fixture.broker.stop() }
        var workerConfiguration = fastWorkerConfiguration()
        workerConfiguration.heartbeatLiveness = 3
        let workers = (0..<3).map { fixture.worker("healthy.\($0)", configuration: workerConfiguration) }
        defer { workers.forEach { $0.stop() } }
        for index in 0..<3 { #expect(try await fixture.awaitWorkers("healthy.\(index)", count: 1)) }
        // Garbage as fast as eight sockets can send it, for two seconds.
        let sent = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<8 {
                group.addTask {
                    try await onThread {
                        var random = FuzzRandom(state: 0xF100D &+ UInt64(index))
                        let garbage = (0..<64).map { _ in [[]] + (0..<3).map { _ in (0..<16).map { _ in UInt8.random(in: 0...255, using: &random) } } }
                        let peer = try RawPeer(context: fixture.context, endpoint: fixture.endpoint)
                        let until = ContinuousClock.now + .seconds(2)
                        var count = 0
                        while ContinuousClock.now < until {
                            for message in garbage { try peer.socket.send(message) }
                            count += garbage.count
                            while try peer.socket.receiveMessage(dontWait: true) != nil {}
                        }
                        return count
                    }
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(sent > 1000)
        #expect(try await eventually { fixture.broker.statistics.badInput.total >= sent / 2 })
        let statistics = fixture.broker.statistics
        #expect(statistics.workersExpired == 0, "healthy workers were expired under the flood: \(statistics)")
        for index in 0..<3 { #expect(statistics.workersPerService["healthy.\(index)"] == 1) }
    }
}
