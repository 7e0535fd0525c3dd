import FlowProtocol
import Foundation
import Logging
import Majordomo
import ZeroMQ
import Synchronization

/// Serves app services (`svc.*`) from handlers: each service its own MDP worker lanes on its
/// own thread, until `stop` says so.
public enum ServiceWorkerRuntime {
    public static func serve(
        _ handlers: [String: ServiceHandler], bus: PluginBus, until stop: @escaping @Sendable () -> Bool
    ) throws {
        let failures = Mutex<[String]>([])
        let box = HandlersBox(handlers)
        var threads: [Thread] = []
        let finished = DispatchGroup()
        for service in handlers.keys.sorted() {
            let lanes = try MajordomoWorkerLanes(
                context: bus.context, endpoint: bus.environment.broker, service: service, count: bus.environment.lanes,
                configuration: bus.workerConfiguration(), logger: bus.logger)
            let lanesBox = LanesBox(lanes)
            finished.enter()
            let thread = Thread {
                defer { finished.leave() }
                guard let handler = box.handlers[service] else { return }
                let writer = bus.environment.writer
                // The lanes of one service run on this thread, so a retry is handled after its first try.
                let replies = RecentReplies(capacity: 4096)
                do {
                    try lanesBox.lanes.run(until: stop) { request in
                        EnvelopeService.reply(to: request.body, writer: writer) { envelope in
                            if let earlier = replies[envelope.idempotencyKey] { return earlier }
                            guard envelope.holds(Flowbus_V1_ServiceCall.self), let call = try? envelope.unwrap(Flowbus_V1_ServiceCall.self) else {
                                return EnvelopeService.wrongKind(envelope, expected: [Flowbus_V1_ServiceCall.protoMessageName], writer: writer)
                            }
                            let reply = EnvelopeService.envelope(handler(call), answering: envelope, writer: writer)
                            replies[envelope.idempotencyKey] = reply
                            return reply
                        }.frames
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
        let failed = failures.withLock { $0 }
        if !failed.isEmpty { throw PluginEnvironmentError("a service stopped: \(failed.joined(separator: "; "))") }
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

/// The replies to the last `capacity` calls by idempotency key: a retried call (same key) gets
/// the first reply again instead of being applied twice. Calls without a key are not kept.
final class RecentReplies {
    let capacity: Int
    private var replies: [String: Envelope] = [:]
    private var order: [String] = []
    private var oldest = 0

    init(capacity: Int) {
        self.capacity = capacity
    }

    subscript(key: String) -> Envelope? {
        get { key.isEmpty ? nil : replies[key] }
        set {
            guard !key.isEmpty, let newValue, replies[key] == nil else { return }
            replies[key] = newValue
            if order.count < capacity {
                order.append(key)
            } else {
                replies[order[oldest]] = nil
                order[oldest] = key
                oldest = (oldest + 1) % capacity
            }
        }
    }
}
