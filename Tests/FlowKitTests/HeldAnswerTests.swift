import Clone
@testable import FlowKit
import FlowProtocol
import FlowbusTesting
import Foundation
import Logging
import Majordomo
import MessagePath
import SwiftProtobuf
import Synchronization
import Testing
import ZeroMQ

/// `SessionLaneServer` holds each answer until the writes it stands for are confirmed, on its
/// own thread: the lane that made the answer is free at once, and the map wakes the loop when
/// the writes are confirmed.
@Suite("Answers held for their writes")
struct HeldAnswerTests {
    /// A state map whose writes are confirmed only when the test says so.
    final class GatedStateMap: StateMap, @unchecked Sendable {
        private let inner = MemoryStateMap()
        private let lock = NSLock()
        private var made: UInt64 = 0
        private var confirmed: UInt64 = 0
        private var stopped = false
        private var sleepers: [(mark: UInt64, signal: WakeSignal)] = []

        /// One write made; returns its mark.
        func write() -> UInt64 { lock.withLock { made += 1; return made } }

        func confirm(through mark: UInt64) {
            let due = lock.withLock { () -> [WakeSignal] in
                confirmed = max(confirmed, mark)
                let due = sleepers.filter { $0.mark <= confirmed }.map(\.signal)
                sleepers.removeAll { $0.mark <= confirmed }
                return due
            }
            for signal in due { signal.wake() }
        }

        var writesMade: UInt64 { lock.withLock { made } }

        func settlement(through mark: UInt64) -> CloneSettlement {
            lock.withLock { confirmed >= mark ? .settled : stopped ? .stopped : .waiting }
        }

        func wake(_ signal: WakeSignal, whenSettledThrough mark: UInt64) {
            let now = lock.withLock { () -> Bool in
                if confirmed >= mark || stopped { return true }
                sleepers.append((mark, signal))
                return false
            }
            if now { signal.wake() }
        }

        func settle(timeout: Duration) -> Bool {
            let deadline = ContinuousClock.now + timeout
            let mark = writesMade
            while settlement(through: mark) == .waiting, ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.001) }
            return settlement(through: mark) == .settled
        }

        func stop() {
            let due = lock.withLock { () -> [WakeSignal] in
                stopped = true
                defer { sleepers = [] }
                return sleepers.map(\.signal)
            }
            for signal in due { signal.wake() }
        }

        var isSynced: Bool { true }
        func value(at key: CloneKey) -> [UInt8]? { inner.value(at: key) }
        func entries(in subtree: CloneSubtree) -> [StateEntry] { inner.entries(in: subtree) }
        func set(_ key: CloneKey, value: [UInt8]) throws(CloneWriteError) { try inner.set(key, value: value) }
        func delete(_ key: CloneKey) throws(CloneWriteError) { try inner.delete(key) }
        func changes(in subtree: CloneSubtree) -> AsyncStream<StateEntry> { inner.changes(in: subtree) }
        func follow(_ subtree: CloneSubtree, _ receive: @escaping @Sendable (StateEntry) -> Void) { inner.follow(subtree, receive) }
        func keepValues(where keep: @escaping @Sendable (String) -> Bool) { inner.keepValues(where: keep) }
    }

    /// A lane server with one lane over `map`, whose handler makes one write per request and
    /// notes the session it ran for; a client to call it.
    final class Served: @unchecked Sendable {
        let broker = try! StopAnnouncementTests.QuietBroker()
        let map = GatedStateMap()
        let stopping = Locked(false)
        let ran = Locked<[(session: String, mark: UInt64)]>([])
        let ended = ThreadRuns.Ended()
        let client: MajordomoClient
        let bus: PluginBus

        init() async throws {
            bus = try StopAnnouncementTests.bus(broker: broker.endpoint, heartbeat: .seconds(10))
            let bus = bus
            bus.stopWillBeAnnounced()
            let (map, ran, stopping, ended) = (map, ran, stopping, ended)
            Thread.detachNewThread {
                defer { ended.signal() }
                try? SessionLaneServer.serve(
                    service: "vm.held", bus: bus, map: map, writer: "held/0", credit: 8, threads: 1, logger: StopAnnouncementTests.quiet,
                    until: { stopping.withLock { $0 } }, ready: {}, malformed: {},
                    handle: { envelope, _ in
                        let mark = map.write()
                        ran.withLock { $0.append((envelope.session, mark)) }
                        return envelope
                    })
            }
            #expect(try await broker.awaitWorker("vm.held"))
            client = try MajordomoClient(context: broker.context, endpoint: broker.endpoint, logger: StopAnnouncementTests.quiet)
        }

        func send(session: String, key: String? = nil) throws {
            let body = try Envelope.wrapping(Google_Protobuf_StringValue(session), session: session, idempotencyKey: key ?? "k-\(session)", writer: "test/0").encoded()
            try client.send(service: "vm.held", body: [body])
        }

        /// The session of the next answer, or "unsettled" for the held-back frame; nil if none comes in time.
        func answer(within timeout: Duration) throws -> String? {
            guard let reply = try client.receive(timeout: timeout) else { return nil }
            if reply.body == [ErrorReply.unsettledFrame] { return "unsettled" }
            return try reply.body.first.map { try Envelope.decodeChecked($0).session }
        }

        func mark(of session: String) -> UInt64? { ran.withLock { $0.first { $0.session == session }?.mark } }

        func runs(of session: String) -> [UInt64] { ran.withLock { $0.filter { $0.session == session }.map(\.mark) } }

        func stop() async {
            stopping.withLock { $0 = true }
            bus.announceStop()
            #expect(await ended.wait(upTo: .seconds(5)), "the lane server did not end on its announced stop")
        }
    }

    @Test("an answer waits for its writes without holding its lane: the one lane serves the next session meanwhile, and answers go in mark order once confirmed")
    func answersWaitWithoutHoldingTheirLane() async throws {
        let served = try await Served()
        try await onThread {
            try served.send(session: "s1")
            // Its handler ran, its write is not confirmed: no answer.
            #expect(try served.answer(within: .milliseconds(300)) == nil)
            let first = try #require(served.mark(of: "s1"))
            // With the lane parked until s1's write was confirmed, s2's handler would not run.
            try served.send(session: "s2")
            // Well within the 2 s an answer may wait.
            let deadline = ContinuousClock.now + .seconds(1)
            while served.mark(of: "s2") == nil, ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.005) }
            let second = try #require(served.mark(of: "s2"), "the only lane was held while s1's answer waited")
            #expect(try served.answer(within: .milliseconds(200)) == nil)
            // Confirmed through s1's write only: s1's answer goes, s2's still waits.
            served.map.confirm(through: first)
            #expect(try served.answer(within: .seconds(1)) == "s1")
            #expect(try served.answer(within: .milliseconds(200)) == nil)
            served.map.confirm(through: second)
            #expect(try served.answer(within: .seconds(1)) == "s2")
        }
        await served.stop()
    }

    @Test("a session's next request waits until its last answer went: a handler reads back what the one before it wrote")
    func aSessionsNextRequestWaitsForItsLastAnswer() async throws {
        let served = try await Served()
        try await onThread {
            try served.send(session: "s1", key: "a")
            try served.send(session: "s1", key: "b")
            try served.send(session: "s2")
            // s2 runs; s1's second request does not, while s1's first answer waits.
            let deadline = ContinuousClock.now + .seconds(1)
            while served.mark(of: "s2") == nil, ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.005) }
            #expect(served.mark(of: "s2") != nil, "another session was held up")
            Thread.sleep(forTimeInterval: 0.3)
            let first = try #require(served.runs(of: "s1").first)
            #expect(served.runs(of: "s1").count == 1, "s1's next request ran before its last answer went")
            served.map.confirm(through: first)
            #expect(try served.answer(within: .seconds(1)) == "s1")
            let again = ContinuousClock.now + .seconds(1)
            while served.runs(of: "s1").count < 2, ContinuousClock.now < again { Thread.sleep(forTimeInterval: 0.005) }
            #expect(served.runs(of: "s1").count == 2, "s1's next request did not run once its last answer went")
            served.map.confirm(through: served.map.writesMade)
            let rest = [try served.answer(within: .seconds(1)), try served.answer(within: .seconds(1))]
            #expect(Set(rest.compactMap { $0 }) == ["s1", "s2"], "\(rest)")
        }
        await served.stop()
    }

    @Test("an answer whose writes are not confirmed within 2 s goes as the unsettled frame; one whose map stopped goes so at once")
    func unconfirmedAnswersAreHeldBack() async throws {
        let served = try await Served()
        try await onThread {
            let started = ContinuousClock.now
            try served.send(session: "s1")
            #expect(try served.answer(within: .seconds(5)) == "unsettled")
            #expect(ContinuousClock.now - started >= AnswerSettling.timeout)
            try served.send(session: "s2")
            let deadline = ContinuousClock.now + .seconds(2)
            while served.mark(of: "s2") == nil, ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.005) }
            served.map.stop()
            #expect(try served.answer(within: .milliseconds(1500)) == "unsettled")
        }
        await served.stop()
    }
}
