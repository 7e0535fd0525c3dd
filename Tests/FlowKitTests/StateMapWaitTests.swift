import Clone
@testable import FlowKit
import FlowProtocol
import FlowbusTesting
import Foundation
import Logging
import Synchronization
import Testing
import ZeroMQ

/// `StateMap.wait(forChangesOf:)`, what a view-model replica waits with for another replica's
/// state: the condition is looked at once, then once a change of the key, and at no other time.
/// The real map (a Clone server and two agents over ipc://) and the in-memory one behave alike.
@Suite struct StateMapWaitTests {
    /// One writer's map and one waiter's map over the same state, stopped with `stop()`.
    struct Maps {
        let writer: any StateMap
        let waiter: any StateMap
        let stop: @Sendable () -> Void
    }

    static let logger: Logger = {
        var logger = Logger(label: "flowbus.flowkit.tests")
        logger.logLevel = .critical
        return logger
    }()

    static func cloneMaps() async throws -> Maps {
        let context = try ZMQContext()
        let endpoints = try CloneEndpoints(base: "ipc://\(TestScratch.directory("fbw"))/c")
        let server = try CloneServer.start(context: context, endpoints: endpoints, logger: logger)
        var configuration = CloneAgentConfiguration(subtrees: [""])
        configuration.confirmWrites = true
        let writer = try CloneAgent(context: context, endpoints: endpoints, configuration: configuration, logger: logger)
        let waiter = try CloneAgent(context: context, endpoints: endpoints, configuration: configuration, logger: logger)
        for agent in [writer, waiter] {
            guard await agent.waitUntilSynced(timeout: .seconds(20)) else { throw CancellationError() }
        }
        return Maps(writer: writer, waiter: waiter, stop: {
            writer.stop()
            waiter.stop()
            server.stop()
            _ = context
        })
    }

    static func memoryMaps() -> Maps {
        let map = MemoryStateMap()
        let peer = map.peer()
        return Maps(writer: map, waiter: peer, stop: { map.stop(); peer.stop() })
    }

    static let key = CloneKey.screenMirror(try! ScreenName("tally"), try! SessionID("s1"))
    static let other = CloneKey.screenMirror(try! ScreenName("ledger"), try! SessionID("s1"))

    /// The waiter wants the key to read "3"; the writer writes another key five times, then the key
    /// "1", "2", "3". With a minute's timeout, only the changes can end the wait in time.
    static func wokenByChanges(_ maps: Maps) async throws {
        defer { maps.stop() }
        let looks = Counter()
        let started = ContinuousClock.now
        let wait = Task {
            try await onThread {
                maps.waiter.wait(forChangesOf: key, timeout: .seconds(60)) {
                    looks.value.add(1, ordering: .relaxed)
                    return maps.waiter.value(at: key) == Array("3".utf8)
                }
            }
        }
        try await Task.sleep(for: .milliseconds(100))
        for n in 0..<5 { try maps.writer.set(other, value: Array("\(n)".utf8)) }
        for value in ["1", "2", "3"] {
            try await Task.sleep(for: .milliseconds(30))
            try maps.writer.set(key, value: Array(value.utf8))
        }
        #expect(try await wait.value)
        #expect(ContinuousClock.now - started < .seconds(20), "the wait ran to its timeout: no change of the key woke it")
        // The first look, then one a change of the key: none for the other key, none on a timer.
        let count = looks.value.load(ordering: .relaxed)
        #expect(count >= 2 && count <= 4, "\(count) looks")
    }

    /// Unmet, the wait ends at its timeout; the map stopped, it ends at once.
    static func endsAtTimeoutOrStop(_ maps: Maps) async throws {
        #expect(maps.waiter.wait(forChangesOf: key, timeout: .milliseconds(150)) { false } == false)
        let started = ContinuousClock.now
        let wait = Task { try await onThread { maps.waiter.wait(forChangesOf: key, timeout: .seconds(60)) { false } } }
        try await Task.sleep(for: .milliseconds(100))
        maps.stop()
        #expect(try await wait.value == false)
        #expect(ContinuousClock.now - started < .seconds(20), "the stopped map's wait ran to its timeout")
    }

    @Test func cloneWaitIsWokenByTheKeysChanges() async throws { try await Self.wokenByChanges(try await Self.cloneMaps()) }
    @Test func memoryWaitIsWokenByTheKeysChanges() async throws { try await Self.wokenByChanges(Self.memoryMaps()) }
    @Test func cloneWaitEndsAtTimeoutOrStop() async throws { try await Self.endsAtTimeoutOrStop(try await Self.cloneMaps()) }
    @Test func memoryWaitEndsAtTimeoutOrStop() async throws { try await Self.endsAtTimeoutOrStop(Self.memoryMaps()) }
}

/// A count a waiting thread and the test share.
private final class Counter: Sendable {
    let value = Atomic<Int>(0)
}
