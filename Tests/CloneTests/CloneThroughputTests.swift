import Clone
import Foundation
import Testing
import ZeroMQ

/// Throughput of the server's publish path against raw PUB/SUB, with 64-byte values. Off by
/// default (it wants a release build and an idle machine): FLOWBUS_CLONE_BENCHMARK=1 swift test -c release.
@Suite("Clone throughput", .serialized, .enabled(if: ProcessInfo.processInfo.environment["FLOWBUS_CLONE_BENCHMARK"] == "1"))
struct CloneThroughputTests {
    static let count = Int(ProcessInfo.processInfo.environment["FLOWBUS_CLONE_BENCHMARK_COUNT"] ?? "") ?? 1_000_000
    static let value = [UInt8](repeating: 0x61, count: 64)

    /// Built once, so the sender's cost is the socket's, not string formatting.
    static let messages: [[[UInt8]]] = (0..<1000).map { index in
        [Array("/bench/k\(index)".utf8), [0, 0, 0, 0, 0, 0, 0, 0], [], [], value]
    }

    static func frames(_ index: Int) -> [[UInt8]] { messages[index % 1000] }

    /// Receives until `count` messages arrived or nothing came for a second; returns (received, seconds).
    static func receive(_ socket: ZMQSocket, count: Int, started: @escaping @Sendable () -> Void) throws -> (Int, Double) {
        try socket.setReceiveTimeout(.seconds(1))
        var received = 0
        var start: ContinuousClock.Instant?
        var end = ContinuousClock.now
        while received < count, let message = try socket.receiveMessage() {
            if start == nil { start = .now; started() }
            if message.first == Array("HUGZ".utf8) { continue }
            received += 1
            end = .now
        }
        let seconds = start.map { (end - $0) / .seconds(1) } ?? 0
        return (received, seconds)
    }

    @Test func rawPubSubBaseline() async throws {
        let context = try ZMQContext()
        let endpoint = try CloneEndpoints(base: ipcBase()).publisher
        let publisher = try ZMQSocket(context: context, type: .xpub, linger: .zero)
        try publisher.setSendHighWaterMark(0)
        try publisher.bind(endpoint)
        let subscriber = try ZMQSocket(context: context, type: .sub, linger: .zero)
        try subscriber.setReceiveHighWaterMark(0)
        try subscriber.subscribe("")
        try subscriber.connect(endpoint)
        _ = try publisher.receiveFrame()
        let count = Self.count
        let receiver = Task.detached { try Self.receive(subscriber, count: count) {} }
        for index in 0..<count { try publisher.send(Self.frames(index)) }
        let (received, seconds) = try await receiver.value
        print("raw PUB/SUB: \(received) of \(count) in \(String(format: "%.3f", seconds)) s = \(Int(Double(received) / seconds)) msg/s")
        #expect(received == count)
    }

    @Test func throughTheCloneServer() async throws {
        let fixture = try CloneFixture(hugz: .seconds(5)) { configuration in
            configuration.publisherHighWaterMark = 0
        }
        let subscriber = try ZMQSocket(context: fixture.context, type: .sub, linger: .zero)
        try subscriber.setReceiveHighWaterMark(0)
        try subscriber.subscribe("/bench/")
        try subscriber.connect(fixture.endpoints.publisher)
        let writer = try ZMQSocket(context: fixture.context, type: .xpub, linger: .zero)
        try writer.setXPubNoDrop(true)
        try writer.connect(fixture.endpoints.collector)
        try writer.setReceiveTimeout(.seconds(5))
        _ = try writer.receiveFrame()
        #expect(await eventually { fixture.server!.statistics.subscriptionsReceived >= 1 })
        let count = Self.count
        let receiver = Task.detached { try Self.receive(subscriber, count: count) {} }
        for index in 0..<count { try writer.send(Self.frames(index)) }
        let (received, seconds) = try await receiver.value
        let statistics = fixture.server!.statistics
        print("clone server: \(received) of \(count) in \(String(format: "%.3f", seconds)) s = \(Int(Double(received) / seconds)) updates/s; "
            + "published \(statistics.updatesPublished), blocked \(statistics.publishBlocked)")
        #expect(received == count)
    }

    @Test func agentToAgent() async throws {
        let fixture = try CloneFixture(hugz: .seconds(5)) { configuration in
            configuration.publisherHighWaterMark = 0
        }
        let writer = try await fixture.syncedAgent(["/w/"]) { $0.maxHeldWrites = Self.count + 1 }
        let reader = try await fixture.syncedAgent(["/bench/"])
        let count = Self.count / 4
        let start = ContinuousClock.now
        for index in 0..<count { try writer.set(key: "/bench/k\(index % 1000)", value: Self.value) }
        let done = await eventually(timeout: .seconds(60)) { reader.statistics.updatesApplied >= count }
        let seconds = (ContinuousClock.now - start) / .seconds(1)
        print("agent set → agent applied: \(reader.statistics.updatesApplied) of \(count) in \(String(format: "%.3f", seconds)) s = \(Int(Double(count) / seconds)) updates/s")
        #expect(done)
    }
}
