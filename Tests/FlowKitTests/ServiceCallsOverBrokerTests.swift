import Clone
@testable import FlowKit
import FlowProtocol
import FlowbusTesting
import Foundation
import Logging
import Majordomo
import MessagePath
import Supervision
import Synchronization
import Testing
import ZeroMQ

/// A runtime's calls over a real broker: MDP has no request id, so the second answer to a
/// duplicated call waits on the caller's socket. It must not be taken for the next call's answer
/// (the Photos `survive` failure: a navigation whose answer was a late copy of another call's
/// was never asked again, and the session showed no screen).
@Suite("Service calls over a broker", .serialized)
struct ServiceCallsOverBrokerTests {
    static let quiet = Logger(label: "flowbus.test", factory: { _ in SwiftLogNoOpLogHandler() })

    /// A broker duplicating the first request to `coord.dup`, and a worker that answers each
    /// request (20 ms later) with an envelope carrying the request's key.
    final class DuplicatingBus: @unchecked Sendable {
        let context: ZMQContext
        let broker: BrokerHandle
        let faults = FaultRules()
        let endpoint: String
        let stopping = Atomic<Bool>(false)
        let finished = DispatchSemaphore(value: 0)

        init() throws {
            let folder = TestScratch.directory("fbk")
            endpoint = "ipc://\(folder)/broker"
            context = try ZMQContext()
            broker = try MajordomoBroker.start(context: context, endpoints: [endpoint], faults: faults, logger: ServiceCallsOverBrokerTests.quiet)
            let thread = Thread { [self] in
                defer { finished.signal() }
                guard let worker = try? MajordomoWorker(context: context, endpoint: endpoint, service: "coord.dup",
                                                        configuration: WorkerConfiguration(), logger: ServiceCallsOverBrokerTests.quiet) else { return }
                try? worker.run(until: { [self] in stopping.load(ordering: .relaxed) }) { request in
                    Thread.sleep(forTimeInterval: 0.02)
                    guard let asked = try? Envelope.decodeChecked(request.body.first ?? []),
                          let reply = try? Envelope.wrapping(Flowbus_V1_CoordinatorReply.with { $0.ok = true; $0.result = ["key": asked.idempotencyKey] },
                                                             idempotencyKey: asked.idempotencyKey, writer: "dup/0").encoded()
                    else { return [] }
                    return [reply]
                }
            }
            thread.start()
        }

        func waitForWorker() async throws -> Bool {
            for _ in 0..<250 {
                if broker.statistics.workersPerService["coord.dup", default: 0] == 1 { return true }
                try await Task.sleep(for: .milliseconds(20))
            }
            return false
        }

        func stop() {
            stopping.store(true, ordering: .relaxed)
            finished.wait()
            broker.stop()
        }

        /// One thread: every post goes through the one socket the late answer waits on.
        func calls() throws -> MajordomoCalls {
            let clone = CloneEndpoints(snapshot: endpoint + "-s", publisher: endpoint + "-p", collector: endpoint + "-c")
            let bus = try PluginBus(environment: PluginEnvironment(broker: endpoint, clone: clone, plugin: "caller"), logger: ServiceCallsOverBrokerTests.quiet)
            return try MajordomoCalls(bus: bus, name: "caller", threads: 1)
        }

        /// `calls()`, with the broker set to duplicate the first call made to `coord.dup`.
        func callsWithTheFirstDuplicated() throws -> MajordomoCalls {
            let calls = try calls()
            try faults.install(FaultRule(id: "twice", scope: .service, prefix: "coord.dup", action: .duplicate(copies: 1), limit: 1))
            return calls
        }

        static func call(_ key: String) throws -> [UInt8] {
            try Envelope.wrapping(Flowbus_V1_CoordinatorCall.with { $0.method = "navigate" }, session: "s1", idempotencyKey: key, writer: "caller/0").encoded()
        }

        static func answeredKey(_ bytes: [UInt8]) throws -> String? {
            try Envelope.decodeChecked(bytes).unwrap(Flowbus_V1_CoordinatorReply.self).result["key"]
        }
    }

    @Test func aPostedCallIsNotAnsweredByTheSecondAnswerToTheCallBeforeIt() async throws {
        let bus = try DuplicatingBus()
        defer { bus.stop() }
        #expect(try await bus.waitForWorker())
        let calls = try bus.callsWithTheFirstDuplicated()
        defer { calls.stop() }
        let answers = Mutex<[String: String]>([:])
        for key in ["k1", "k2"] {
            calls.post(service: "coord.dup", body: try DuplicatingBus.call(key), lane: "s1", tries: 3) { outcome in
                let answered = (try? outcome.get()).flatMap { try? DuplicatingBus.answeredKey($0) } ?? "none"
                answers.withLock { $0[key] = answered }
            }
        }
        #expect(calls.waitUntilIdle(lane: "s1", timeout: .seconds(10)))
        #expect(answers.withLock { $0 } == ["k1": "k1", "k2": "k2"])
        #expect(bus.broker.statistics.faults.duplicated == 1)
    }

    @Test func anAwaitedCallIsNotAnsweredByTheSecondAnswerToTheCallBeforeIt() async throws {
        let bus = try DuplicatingBus()
        defer { bus.stop() }
        #expect(try await bus.waitForWorker())
        let calls = try bus.callsWithTheFirstDuplicated()
        defer { calls.stop() }
        let (first, second) = try await Task.detached {
            let first = try DuplicatingBus.answeredKey(try calls.request(service: "coord.dup", body: try DuplicatingBus.call("k1")))
            let second = try DuplicatingBus.answeredKey(try calls.request(service: "coord.dup", body: try DuplicatingBus.call("k2")))
            return (first, second)
        }.value
        #expect(first == "k1" && second == "k2")
        #expect(bus.broker.statistics.faults.duplicated == 1)
    }

    /// Times each of `threads` gave up its CPU to wait (voluntary context switches): a thread
    /// woken for nothing waits again, where a busy machine's preemptions do not count.
    static func timesWaited(_ threads: [Int]) -> [Int] {
        threads.compactMap(LaneHandOffTests.timesWaited)
    }

    /// Issue 16: a call's end woke every idle caller thread (a broadcast on the condition they
    /// wait on), and each found nothing to do: some 4 wasted wake-ups a call with 4 threads, in
    /// every coordinator. Calls made one after another on one lane, each waited for.
    @Test func aCallWakesOneCallerThreadNotEveryIdleOne() async throws {
        let bus = try DuplicatingBus()
        defer { bus.stop() }
        #expect(try await bus.waitForWorker())
        let (_, caller, threads) = try await Self.warmCaller(bus)
        defer { caller.stop() }
        // A first call connected the sockets; then the threads sit idle.
        let done = DispatchSemaphore(value: 0)
        try await Task.sleep(for: .milliseconds(50))
        let calls = 20
        let before = Self.timesWaited(threads)
        #expect(before.count == 4 && before.allSatisfy { $0 > 0 }, "read the 4 caller threads' status")
        let answered = Mutex(0)
        for index in 0..<calls {
            caller.call(service: "coord.dup", body: [try DuplicatingBus.call("k\(index)")], lane: "s1", completion: { outcome in
                if outcome.reply != nil { answered.withLock { $0 += 1 } }
                done.signal()
            })
            #expect(done.wait(timeout: .now() + 10) == .success)
        }
        #expect(caller.waitUntilIdle(timeout: .seconds(5)))
        let perCall = Double(Self.timesWaited(threads).reduce(0, +) - before.reduce(0, +)) / Double(calls)
        #expect(answered.withLock { $0 } == calls)
        // Counted in the times the threads waited, which a busy machine's preemptions do not
        // inflate (the times scheduled did: 3.6 against 7.5–7.9). Measured here: 1.5–1.8 (the
        // wait for the reply, the wait for the next job); 5.55–6.05 with a call's end waking
        // the 3 idle threads again (put back to check).
        #expect(perCall < 3.5, "the caller threads waited \(perCall) times a call")
    }

    /// A caller with its 4 threads started and connected (one call made and answered).
    static func warmCaller(_ bus: DuplicatingBus) async throws -> (PluginBus, BusCaller, [Int]) {
        let plugin = try PluginBus(environment: PluginEnvironment(
            broker: bus.endpoint, clone: CloneEndpoints(snapshot: bus.endpoint + "-s", publisher: bus.endpoint + "-p", collector: bus.endpoint + "-c"),
            plugin: "caller"), logger: Self.quiet)
        let caller = try plugin.makeCaller(name: "caller", threads: 4)
        #expect(await eventually { caller.threadIDs.count == 4 })
        let done = DispatchSemaphore(value: 0)
        caller.call(service: "coord.dup", body: [try DuplicatingBus.call("warm")], completion: { _ in done.signal() })
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(caller.waitUntilIdle(timeout: .seconds(5)))
        return (plugin, caller, caller.threadIDs)
    }

    /// Issue 16: calls queued behind a session's call in flight can only go once it is answered,
    /// by the thread that made it; they wake none of the idle caller threads (before, each woke
    /// one, which found the lane busy and slept again).
    @Test func callsBehindABusyLaneWakeNoIdleCallerThread() async throws {
        let bus = try DuplicatingBus()
        defer { bus.stop() }
        #expect(try await bus.waitForWorker())
        let (_, caller, threads) = try await Self.warmCaller(bus)
        defer { caller.stop() }
        try await Task.sleep(for: .milliseconds(50))
        // Counted in the times the threads waited: a thread woken for nothing waits again, where
        // a busy machine's preemptions (which the times scheduled count: 4 once in CI) do not.
        let before = Self.timesWaited(threads)
        let answered = Mutex(0)
        // The first takes a thread (the worker answers 20 ms later); the rest queue behind it,
        // a millisecond apart, so that a thread woken for one would be asleep again by the next.
        for index in 0..<10 {
            caller.call(service: "coord.dup", body: [try DuplicatingBus.call("b\(index)")], lane: "s1", completion: { outcome in
                if outcome.reply != nil { answered.withLock { $0 += 1 } }
            })
            usleep(1_000)
        }
        let queued = Self.timesWaited(threads)
        #expect(caller.waitUntilIdle(lane: "s1", timeout: .seconds(10)))
        #expect(answered.withLock { $0 } == 10)
        #expect(before.count == 4 && queued.count == 4, "read the 4 caller threads' status")
        // While the 9 queued: the thread of the first call sent it and waits for its answer (20 ms
        // away), its socket's own wake-ups included (4 waits here), and the 3 others did not wake
        // at all. With a thread signalled for every call: 10–12.
        let woken = zip(before, queued).map { $1 - $0 }.reduce(0, +)
        #expect(woken < 8, "the caller threads woke and waited again \(woken) times while 9 calls queued behind a busy lane")
    }

    /// Issue 16: a posted call wakes its caller thread once. Woken while the lock was still held,
    /// the thread ran at once when it shared the poster's CPU (a coordinator pinned to one CPU,
    /// as `flowbus up` places plugins on two), found the lock held, and slept until the unlock
    /// woke it a second time. The poster and the caller threads are pinned to one CPU here;
    /// counted, the times the caller threads waited (a wake-up for nothing is one more).
    @Test func aPostedCallWakesItsCallerThreadOnce() async throws {
        let bus = try DuplicatingBus()
        defer { bus.stop() }
        #expect(try await bus.waitForWorker())
        let (_, caller, threads) = try await Self.warmCaller(bus)
        defer { caller.stop() }
        let posted = Atomic<Int>(0)
        let (pinned, perCall) = try LaneHandOffTests.waitsPerHandOffOnOneCPU(threads: threads, rounds: 30) { done in
            let index = posted.add(1, ordering: .relaxed).newValue
            caller.call(service: "coord.dup", body: [(try? DuplicatingBus.call("p\(index)")) ?? []], lane: "s1", completion: { _ in done.signal() })
        }
        try #require(pinned, "the threads could not be pinned to one CPU")
        let waits = try #require(perCall, "read the 4 caller threads' status")
        // Measured here: 1.7 after the change, 2.6–2.7 before it.
        #expect(waits < 2.2, "the caller threads waited \(waits) times a call")
    }
}
