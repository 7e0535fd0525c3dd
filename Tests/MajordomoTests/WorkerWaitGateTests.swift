import Dispatch
import Foundation
@testable import Majordomo
import MessagePath
import Synchronization
import Testing
import ZeroMQ

/// A worker whose serving thread holds a `WaitGate` lets other threads send its replies while it
/// sleeps in `receive` (`replyWhileWaiting`), as Flowbus's coordinators and view models answer
/// from their lanes.
@Suite("Worker wait gate")
struct WorkerWaitGateTests {
    /// What the answering threads did, shared with the serving thread.
    final class Answers: @unchecked Sendable {
        private let lock = NSLock()
        private var handedBack: [(MajordomoRequest, [Frame])] = []
        private(set) var direct = 0
        private(set) var wakes = 0

        func handBack(_ request: MajordomoRequest, _ body: [Frame]) { lock.withLock { handedBack.append((request, body)) } }
        func sentDirectly(mustWake: Bool) { lock.withLock { direct += 1; if mustWake { wakes += 1 } } }
        func takeHandedBack() -> [(MajordomoRequest, [Frame])] { lock.withLock { defer { handedBack.removeAll() }; return handedBack } }
        var counts: (direct: Int, wakes: Int) { lock.withLock { (direct, wakes) } }
    }

    final class WorkerBox: @unchecked Sendable {
        let worker: MajordomoWorker
        init(_ worker: MajordomoWorker) { self.worker = worker }
    }

    /// 600 requests in flight through the broker, 32 at a time to the worker; each is answered
    /// from a thread of a pool: sent there when the serving thread sleeps, handed back to it when
    /// it is awake. Every request must be answered once, and no request may sit on the socket
    /// while the serving thread's poll waits out its 2 s: a reply sent from the pool takes in the
    /// socket's pending commands, and a request that came meanwhile wakes the poll only if the
    /// pool's thread says so. The broker and worker are patient (requests kept a minute, peers
    /// thought dead after 10 s of silence), so that a machine too loaded to run the threads on
    /// time (one CPU shared with other suites) makes the test slow, not wrong.
    @Test func otherThreadsAnswerWhileTheServingThreadSleeps() async throws {
        var patient = fastBrokerConfiguration(liveness: 100)
        patient.requestExpiry = .seconds(60)
        let fixture = try BrokerFixture(configuration: patient)
        defer { fixture.broker.stop() }
        let total = 600
        let serving = Task {
            try await onThread { () throws -> (served: Int, direct: Int, handedBack: Int, stalls: Int) in
                var configuration = fastWorkerConfiguration()
                configuration.credit = 32
                configuration.heartbeatLiveness = 100
                let worker = try MajordomoWorker(
                    context: fixture.context, endpoint: fixture.endpoint, service: "gated", configuration: configuration, logger: quietLogger)
                defer { worker.disconnect() }
                let gate = WaitGate()
                gate.lock()
                defer { gate.unlock() }
                worker.waitGate = gate
                let wake = try WakeSignal()
                worker.watch(wake)
                let box = WorkerBox(worker)
                let answers = Answers()
                let pool = DispatchQueue(label: "answering", attributes: .concurrent)
                var served = 0, handedBack = 0, stalls = 0
                let deadline = ContinuousClock.now + .seconds(60)
                while ContinuousClock.now < deadline {
                    for (request, body) in answers.takeHandedBack() {
                        worker.reply(to: request, body: body)
                        handedBack += 1
                    }
                    if served == total && answers.counts.direct + handedBack == total { break }
                    let started = ContinuousClock.now
                    // Once every request came, only the last replies are awaited: their
                    // threads may wake nobody.
                    guard let request = try worker.receive(timeout: served < total ? .seconds(2) : .milliseconds(10)) else {
                        // The poll slept its whole wait with a request on the socket: its wake-up
                        // was lost. (A wait with nothing on the socket is only a slow machine.)
                        if served < total && ContinuousClock.now - started >= .seconds(2), try worker.socket?.hasMessage() == true { stalls += 1 }
                        continue
                    }
                    served += 1
                    pool.async {
                        switch box.worker.replyWhileWaiting(to: request, body: request.body) {
                        case nil:
                            answers.handBack(request, request.body)
                            wake.wake()
                        case let mustWake?:
                            answers.sentDirectly(mustWake: mustWake)
                            if mustWake { wake.wake() }
                        }
                    }
                }
                return (served, answers.counts.direct, handedBack, stalls)
            }
        }
        #expect(try await fixture.awaitWorkers("gated", count: 1))
        let replies = try await onThread { () throws -> [String] in
            let client = try fixture.client(timeout: .seconds(10))
            for index in 0..<total { try client.send(service: "gated", body: frames("\(index)")) }
            var bodies: [String] = []
            while bodies.count < total, let reply = try client.receive(timeout: .seconds(10)) {
                bodies.append(reply.body.map(text).joined())
            }
            return bodies
        }
        let outcome = try await serving.value
        #expect(Set(replies) == Set((0..<total).map(String.init)) && replies.count == total)
        #expect(outcome.served == total && outcome.direct + outcome.handedBack == total)
        #expect(outcome.stalls == 0, "requests waited out the serving thread's poll: a wake-up was lost")
        // Most replies leave from the pool's threads while the serving thread sleeps.
        #expect(outcome.direct > 0, "\(outcome)")
    }

    /// Without a gate, or while the serving thread holds it, nothing is sent from another thread.
    @Test func noReplyFromAnotherThreadWhileTheGateIsHeld() async throws {
        let fixture = try BrokerFixture()
        defer { fixture.broker.stop() }
        let pending = Task {
            try await onThread { try fixture.client(timeout: .seconds(5)).request(service: "held", body: frames("7")) }
        }
        let (ungated, held, sent) = try await onThread { () throws -> (Bool?, Bool?, Bool) in
            let worker = try MajordomoWorker(
                context: fixture.context, endpoint: fixture.endpoint, service: "held", configuration: fastWorkerConfiguration(), logger: quietLogger)
            defer { worker.disconnect() }
            guard let request = try worker.receive(timeout: .seconds(5)) else { return (nil, nil, false) }
            let ungated = worker.replyWhileWaiting(to: request, body: frames("no gate"))
            let gate = WaitGate()
            gate.lock()
            defer { gate.unlock() }
            worker.waitGate = gate
            // Held by this thread, awake: another thread's try fails.
            let held = DispatchQueue.global().sync { WorkerBox(worker).worker.replyWhileWaiting(to: request, body: frames("held")) }
            worker.reply(to: request, body: frames("from the serving thread"))
            return (ungated, held, true)
        }
        #expect(ungated == nil && held == nil && sent)
        #expect(try await pending.value.map(text) == ["from the serving thread"])
    }
}
