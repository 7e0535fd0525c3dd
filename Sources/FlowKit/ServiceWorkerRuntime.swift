import FlowProtocol
import Foundation
import Logging
import Majordomo
import MessagePath
import ZeroMQ
import Synchronization

/// Serves app services (`svc.*`) from handlers: each service its own MDP worker lanes on its
/// own thread, until `stop` says so.
public enum ServiceWorkerRuntime {
    /// - Parameter replies: where each call's reply is kept by idempotency key, so a retry is
    ///   answered with it instead of applied again. Nil: each service keeps its newest 4096
    ///   replies in memory (a restarted process has forgotten them). A store shared by the
    ///   services keeps each one's replies apart. When the store fails, that call is answered
    ///   UNAVAILABLE and every service stops: `serve` throws, and the supervisor restarts the
    ///   process from what its store holds.
    public static func serve(
        _ handlers: [String: ServiceHandler], bus: PluginBus, replies store: (any ServiceReplyStore)? = nil,
        until stop: @escaping @Sendable () -> Bool
    ) throws {
        let failures = Mutex<[String]>([])
        let failed = Atomic<Bool>(false)
        let box = HandlersBox(handlers)
        var threads: [Thread] = []
        let finished = DispatchGroup()
        // One wake-up per service thread: woken by the bus's stop announcement, and by a
        // service whose store failed, so every thread sleeps until it has something to do.
        var wakes: [WakeSignal] = []
        for _ in handlers.keys {
            do { wakes.append(try WakeSignal()) } catch { throw PluginEnvironmentError("the services could not make their wake-up pipes: \(error)") }
        }
        let stopIsAnnounced = wakes.allSatisfy { bus.wakeOnStop($0) }
        let allWakes = wakes
        for (service, wake) in zip(handlers.keys.sorted(), wakes) {
            let lanes = try MajordomoWorkerLanes(
                context: bus.context, endpoint: bus.environment.broker, service: service, count: bus.environment.lanes,
                configuration: bus.workerConfiguration(), logger: bus.logger)
            let lanesBox = LanesBox(lanes)
            finished.enter()
            let thread = Thread {
                ThreadName.set("fb-\(service)")
                defer { finished.leave() }
                guard let handler = box.handlers[service] else { return }
                let writer = bus.environment.writer
                // The lanes of one service run on this thread, so a retry is handled after its first try.
                let replies = store ?? InMemoryServiceReplies()
                do {
                    try lanesBox.lanes.run(until: { stop() || failed.load(ordering: .relaxed) }, wake: stopIsAnnounced ? wake : nil) { request in
                        let answer = respond(to: request.body, service: service, handler: handler, replies: replies, writer: writer)
                        if let failure = answer.storeFailure {
                            bus.logger.critical("the reply store failed; stopping the services so they restart from what it holds", metadata: [
                                "flowbus.service": "\(service)", "flowbus.error": "\(failure)",
                            ])
                            failures.withLock { $0.append("\(service): the reply store failed: \(failure)") }
                            failed.store(true, ordering: .relaxed)
                            for other in allWakes { other.wake() }
                        }
                        return answer.frames
                    }
                } catch {
                    failures.withLock { $0.append("\(service): \(error)") }
                }
            }
            thread.name = "flowbus-\(service)"
            threads.append(thread)
            bus.logger.info("serving", metadata: ["flowbus.service": "\(service)", "flowbus.lanes": "\(bus.environment.lanes)"])
        }
        threads.forEach { $0.start() }
        finished.wait()
        let stopped = failures.withLock { $0 }
        if !stopped.isEmpty { throw PluginEnvironmentError("a service stopped: \(stopped.joined(separator: "; "))") }
    }

    /// One request to `service`: a ServiceCall envelope answered by `handler`, or by the reply
    /// `replies` kept for its idempotency key. `storeFailure` is set when the store failed (the
    /// reply is then UNAVAILABLE).
    static func respond(
        to body: [Frame], service: String, handler: ServiceHandler, replies: any ServiceReplyStore, writer: String
    ) -> (frames: [Frame], storeFailure: (any Error)?) {
        var storeFailure: (any Error)?
        let frames = EnvelopeService.replyBytes(to: body, writer: writer) { envelope in
            guard envelope.holds(Flowbus_V1_ServiceCall.self), let call = try? envelope.unwrap(Flowbus_V1_ServiceCall.self) else {
                let wrong = EnvelopeService.wrongKind(envelope, expected: [Flowbus_V1_ServiceCall.protoMessageName], writer: writer)
                return (try? wrong.encoded()) ?? []
            }
            do {
                return try replies.answer(replyKey(service: service, idempotencyKey: envelope.idempotencyKey)) {
                    (try? EnvelopeService.envelope(handler(call), answering: envelope, writer: writer).encoded()) ?? []
                }
            } catch {
                storeFailure = error
                let unavailable = ErrorReply.envelope(
                    .unavailable, message: "\(service) could not keep its reply to this call, so it is restarting: \(error)",
                    hint: "retry the call with the same idempotency key once the service serves again", session: envelope.session,
                    idempotencyKey: envelope.idempotencyKey, writer: writer)
                return (try? unavailable.encoded()) ?? []
            }
        }.frames
        return (frames, storeFailure)
    }

    /// The key a reply is kept under: the service's name and the call's idempotency key, so the
    /// same key sent to two services is two calls; empty (nothing kept) without a key.
    static func replyKey(service: String, idempotencyKey: String) -> String {
        idempotencyKey.isEmpty ? "" : service + " " + idempotencyKey
    }
}

final class HandlersBox: @unchecked Sendable {
    let handlers: [String: ServiceHandler]
    init(_ handlers: [String: ServiceHandler]) { self.handlers = handlers }
}

final class LanesBox: @unchecked Sendable {
    let lanes: MajordomoWorkerLanes
    init(_ lanes: MajordomoWorkerLanes) { self.lanes = lanes }
}
