import Clone
import FlowProtocol
import Foundation
import Logging
import Majordomo
import MessagePath
import ZeroMQ

/// How coordinators and view models serve their MDP service: one worker offering `credit`
/// (Flowbus's 7/MDP extension), each request decoded once to find its session and handled on a
/// `LaneExecutor`, one at a time per session. A session waiting on another process holds up no
/// other session, and one session's requests, retries included, are answered in order. Each
/// answer waits for its writes (`AnswerSettling`); a handler past the worker's busy limit stops
/// the heartbeats (`LaneExecutor.stopsHeartbeats`). Idle, and with its stop announced by the bus
/// (`PluginBus.wakeOnStop`), the loop sleeps until a request, a heartbeat or the stop; with work
/// on the lanes, or a stop nobody announces, it looks every 100 ms.
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
        // Answers made on the lanes, each with the mark of the writes it stands for. This thread
        // sends each once the agent has confirmed those writes, woken by the agent itself: the
        // lane is free as soon as its handler returns, and a confirmation wakes one thread here,
        // not a parked lane that then wakes this one.
        let answered = Locked<[HeldAnswer]>([])
        let settling = AnswerSettling(service: service, logger: logger)
        var holding = HeldAnswers()
        // One request per session at a time, from its handing to a lane until its answer is sent:
        // a handler reads what the earlier ones of its session wrote (the agent's copy holds a
        // write once it is confirmed), so the next one of the session waits here meanwhile,
        // while the lanes serve other sessions.
        var sessions = SessionTurns()
        let executor = LaneExecutor(name: service, threads: threads)
        ready()
        var hungLogged = false
        // Requests taken and not yet answered: while there are any, the loop wakes every 100 ms
        // to see whether one has run past the busy limit (or its writes past their time).
        var outstanding = 0
        func dispatch(_ envelope: Envelope, _ request: MajordomoRequest) {
            let session = envelope.session
            executor.run(lane: session) {
                let answer = [(try? handle(envelope, request).encoded()) ?? []]
                let held = HeldAnswer(request: request, session: session, frames: answer, mark: map.writesMade,
                                      deadline: .now + AnswerSettling.timeout)
                answered.withLock { $0.append(held) }
                // The loop is woken once the answer can go (at once when its writes are
                // confirmed already), not now to find it waiting and again later.
                map.wake(wake, whenSettledThrough: held.mark)
            }
        }
        while !stop() {
            if executor.stopsHeartbeats(limit: configuration.busyLimit, logged: &hungLogged, logger: logger, service: service) {
                Thread.sleep(forTimeInterval: 0.1)
                continue
            }
            let request = try worker.receive(timeout: outstanding == 0 && stopIsAnnounced ? nil : .milliseconds(100))
            holding.take(answered.withLock { answers in defer { answers.removeAll() }; return answers })
            for session in holding.send(worker: worker, map: map, wake: wake, settling: settling) {
                outstanding -= 1
                if let next = sessions.finished(session) { dispatch(next.envelope, next.request) }
            }
            guard let request else { continue }
            switch EnvelopeService.request(in: request.body, writer: writer) {
            case .malformed(let answer):
                malformed()
                worker.reply(to: request, body: answer)
            case .envelope(let envelope):
                outstanding += 1
                if sessions.begin(envelope, request) { dispatch(envelope, request) }
            }
        }
        executor.stop()
        // Stopping: what the lanes answered goes once its writes are confirmed, within its time;
        // requests that waited for their session's turn are left to their callers' retries.
        holding.take(answered.withLock { $0 })
        while !holding.isEmpty {
            _ = holding.send(worker: worker, map: map, wake: wake, settling: settling)
            if !holding.isEmpty { Thread.sleep(forTimeInterval: 0.005) }
        }
        worker.disconnect()
    }
}

/// Which sessions have a request on the lanes or an answer held, and the requests of theirs that
/// came meanwhile, in order.
struct SessionTurns {
    private var waiting: [String: [(envelope: Envelope, request: MajordomoRequest)]] = [:]

    /// True when the session has nothing in hand, so the request goes to the lanes now; else it
    /// waits for `finished`.
    mutating func begin(_ envelope: Envelope, _ request: MajordomoRequest) -> Bool {
        if waiting[envelope.session] == nil {
            waiting[envelope.session] = []
            return true
        }
        waiting[envelope.session]!.append((envelope, request))
        return false
    }

    /// The session's request was answered: its next one, if any, to go to the lanes now.
    mutating func finished(_ session: String) -> (envelope: Envelope, request: MajordomoRequest)? {
        guard var queue = waiting[session] else { return nil }
        guard !queue.isEmpty else {
            waiting[session] = nil
            return nil
        }
        let next = queue.removeFirst()
        waiting[session] = queue
        return next
    }
}

/// An answer made on a lane, waiting for the writes it stands for.
struct HeldAnswer {
    var request: MajordomoRequest
    var session: String
    var frames: [Frame]
    /// The map's `writesMade` once the handler returned.
    var mark: UInt64
    /// When it is sent as `ErrorReply.unsettledFrame` instead (`AnswerSettling.timeout`).
    var deadline: ContinuousClock.Instant
}

/// The answers a `SessionLaneServer` holds, in the order the lanes made them. One session's
/// answers come in its order and with growing marks, and the map settles in mark order, so
/// sending every settled one in list order keeps each session's order.
struct HeldAnswers {
    private var answers: [HeldAnswer] = []
    /// The mark the wake-up pipe was last put down for (nil: none asked for).
    private var wakeAskedAt: UInt64?

    var isEmpty: Bool { answers.isEmpty }

    mutating func take(_ new: [HeldAnswer]) {
        answers.append(contentsOf: new)
    }

    /// Sends the answers whose writes are confirmed, and, in place of those past their time or
    /// whose map stopped, `ErrorReply.unsettledFrame`; asks the map to wake `wake` when the
    /// lowest mark still held is confirmed. Returns the sessions of those that went, in order.
    mutating func send(worker: MajordomoWorker, map: any StateMap, wake: WakeSignal, settling: AnswerSettling) -> [String] {
        guard !answers.isEmpty else { return [] }
        let now = ContinuousClock.now
        var sent: [String] = []
        var waiting: [HeldAnswer] = []
        var lowest: UInt64?
        for answer in answers {
            switch map.settlement(through: answer.mark) {
            case .settled:
                worker.reply(to: answer.request, body: answer.frames)
            case .stopped:
                worker.reply(to: answer.request, body: settling.heldBack())
            case .waiting where now >= answer.deadline:
                worker.reply(to: answer.request, body: settling.heldBack())
            case .waiting:
                waiting.append(answer)
                lowest = min(lowest ?? answer.mark, answer.mark)
                continue
            }
            sent.append(answer.session)
        }
        answers = waiting
        if let lowest, wakeAskedAt != lowest {
            map.wake(wake, whenSettledThrough: lowest)
            wakeAskedAt = lowest
        } else if lowest == nil {
            wakeAskedAt = nil
        }
        return sent
    }
}
