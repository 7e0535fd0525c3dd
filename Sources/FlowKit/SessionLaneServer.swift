import FlowProtocol
import Foundation
import Logging
import Majordomo
import MessagePath
import Synchronization
import ZeroMQ

/// How coordinators and view models serve their MDP service: one worker offering `credit`
/// (Flowbus's 7/MDP extension), each request decoded once to find its session and handled on a
/// `LaneExecutor`, one at a time per session. A session waiting on another process holds up no
/// other session, and one session's requests, retries included, are answered in order. Each
/// answer waits for its writes (`AnswerSettling`), without a thread waiting with it: the lane
/// goes on to its next request, and the answer leaves from the thread that learns the writes are
/// confirmed (the Clone agent's, as the confirmation comes in). A handler past the worker's busy limit stops
/// the heartbeats (`LaneExecutor.stopsHeartbeats`). Idle, and with its stop announced by the bus
/// (`PluginBus.wakeOnStop`), the loop sleeps until a request, a heartbeat or the stop; with work
/// on the lanes, or a stop nobody announces, it looks every 100 ms.
///
/// Whichever thread has the answer (a lane, or the Clone agent's) sends it itself when the loop
/// is asleep (`MajordomoWorker.replyWhileWaiting`), so the loop wakes once a request, not twice,
/// and the answer leaves without waiting for another thread to be scheduled; when the loop is
/// awake, the answer is handed to it.
enum SessionLaneServer {
    /// Serves `service` until `stop` returns true. `ready` runs once the worker exists, before
    /// the first request is read; `malformed` counts a request that is not one envelope (it is
    /// answered at once: nothing was applied, no writes to wait for).
    static func serve(
        service: String, bus: PluginBus, map: any StateMap, writer: String, credit: Int, threads: Int, logger: Logger,
        until stop: () -> Bool, ready: () -> Void, malformed: () -> Void,
        handle: @escaping (Envelope, MajordomoRequest) -> Envelope
    ) throws {
        var configuration = bus.workerConfiguration()
        configuration.credit = credit
        let worker = try MajordomoWorker(
            context: bus.context, endpoint: bus.environment.broker, service: service, configuration: configuration, logger: logger)
        let wake: WakeSignal
        do { wake = try WakeSignal() } catch { throw PluginEnvironmentError("\(service) could not make its wake-up pipe: \(error)") }
        worker.watch(wake)
        let stopIsAnnounced = bus.wakeOnStop(wake)
        let answered = Locked<[(request: MajordomoRequest, frames: [Frame])]>([])
        let settling = AnswerSettling(map: map, service: service, logger: logger)
        let executor = LaneExecutor(name: service, threads: threads)
        // This thread holds the gate but while it sleeps in the worker's poll.
        let gate = WaitGate()
        gate.lock()
        defer { gate.unlock() }
        worker.waitGate = gate
        ready()
        var hungLogged = false
        // Requests handed to the lanes and not yet answered: while there are any, the loop
        // wakes every 100 ms to see whether one has run past the busy limit.
        let outstanding = Atomic<Int>(0)
        // Cleared as the loop ends: an answer whose writes settle after that is dropped (the
        // caller asks again), never sent on a closed worker.
        let open = Atomic<Bool>(true)
        // Sends the answers handed to this thread (their lanes found it awake).
        func sendHandedBack() {
            for reply in answered.withLock({ replies in defer { replies.removeAll() }; return replies }) {
                worker.reply(to: reply.request, body: reply.frames)
                outstanding.subtract(1, ordering: .relaxed)
            }
        }
        while !stop() {
            if executor.stopsHeartbeats(limit: configuration.busyLimit, logged: &hungLogged, logger: logger, service: service) {
                Thread.sleep(forTimeInterval: 0.1)
                continue
            }
            let idle = outstanding.load(ordering: .relaxed) == 0
            let request = try worker.receive(timeout: idle && stopIsAnnounced ? nil : .milliseconds(100))
            sendHandedBack()
            guard let request else { continue }
            switch EnvelopeService.request(in: request.body, writer: writer) {
            case .malformed(let answer):
                malformed()
                worker.reply(to: request, body: answer)
            case .envelope(let envelope):
                outstanding.add(1, ordering: .relaxed)
                executor.run(lane: envelope.session) {
                    let answer = [(try? handle(envelope, request).encoded()) ?? []]
                    settling.whenSettled(answer) { answer in
                        guard open.load(ordering: .acquiring) else { return }
                        switch worker.replyWhileWaiting(to: request, body: answer) {
                        case nil:
                            answered.withLock { $0.append((request, answer)) }
                            wake.wake()
                        case let mustWake?:
                            outstanding.subtract(1, ordering: .relaxed)
                            if mustWake { wake.wake() }
                        }
                    }
                }
            }
        }
        executor.stop()
        // Answers still waiting for their writes get as long as one may wait (then they are held
        // back as unsettled); this thread holds the gate, so they are handed to it.
        let patience = ContinuousClock.now + AnswerSettling.timeout + .milliseconds(500)
        while true {
            sendHandedBack()
            guard outstanding.load(ordering: .relaxed) > 0, ContinuousClock.now < patience else { break }
            Thread.sleep(forTimeInterval: 0.002)
        }
        open.store(false, ordering: .releasing)
        worker.disconnect()
    }
}
