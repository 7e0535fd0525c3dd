import Foundation
import Logging
import MessagePath
import ZeroMQ

/// Several 7/MDP workers for one service, served by one thread. Each lane is a whole worker
/// as the RFC has it (its own DEALER, its own READY and heartbeats, one request at a time),
/// so a process keeps several requests in flight without bending the protocol: the broker
/// simply sees more workers. Not thread-safe: create and use it on one thread.
public final class MajordomoWorkerLanes {
    public let lanes: [MajordomoWorker]
    public let service: String

    /// Opens `count` lanes. With a routing id `<plugin>/<pid>/<n>`, lane i is `<plugin>/<pid>/<n+i>`,
    /// so the host still ties every lane to its process.
    public init(
        context: ZMQContext, endpoint: String, service: String, count: Int,
        configuration: WorkerConfiguration = WorkerConfiguration(), logger: Logger
    ) throws(MajordomoWorkerError) {
        precondition(count >= 1, "a worker needs at least one lane")
        var lanes: [MajordomoWorker] = []
        for index in 0..<count {
            var laneConfiguration = configuration
            laneConfiguration.routingID = configuration.routingID.map { Self.laneID($0, index: index) }
            lanes.append(try MajordomoWorker(
                context: context, endpoint: endpoint, service: service, configuration: laneConfiguration, logger: logger))
        }
        self.lanes = lanes
        self.service = service
    }

    static func laneID(_ id: String, index: Int) -> String {
        var parts = id.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        if let last = parts.last, let first = Int(last) {
            parts[parts.count - 1] = String(first + index)
            return parts.joined(separator: "/")
        }
        return index == 0 ? id : "\(id)-\(index)"
    }

    /// Serves every lane until `stop` returns true, then disconnects them all. The handler runs
    /// on this thread, one request at a time, while another keeps every lane's heartbeats going
    /// (see `WorkerConfiguration.busyLimit`). `stop` is checked at least every 100 ms; with a
    /// `wake` that is woken whenever `stop` may have become true, only after a request, a
    /// heartbeat or a wake-up, so an idle service does not wake ten times a second for nothing.
    public func run(until stop: () -> Bool, wake: WakeSignal? = nil, handler: (MajordomoRequest) -> [Frame]) throws(MajordomoWorkerError) {
        defer { lanes.forEach { $0.disconnect() } }
        var poller = ZMQPoller()
        var polledSockets: [ObjectIdentifier?]? = nil
        var wakeIndex: Int?
        while !stop() {
            // A lane that reconnected has a new socket; poll the current ones.
            let sockets = lanes.map { $0.socket.map(ObjectIdentifier.init) }
            if sockets != polledSockets {
                poller = ZMQPoller()
                for lane in lanes { if let socket = lane.socket { poller.add(socket) } }
                wakeIndex = wake.map { poller.add(fileDescriptor: $0.fileDescriptor) }
                polledSockets = sockets
            }
            var now = MonotonicTime.now()
            var wait = wake == nil ? Duration.milliseconds(100) : .seconds(3600)
            for lane in lanes {
                wait = min(wait, lane.reconnectAt.map { now.until($0) } ?? now.until(lane.nextHeartbeat))
            }
            do {
                try poller.poll(timeout: wait)
                if let wakeIndex, let wake, poller.isReadable(wakeIndex) { wake.drain() }
            } catch {
                if error.code == .terminated { throw .transport(error, endpoint: lanes[0].endpoint) }
            }
            now = .now()
            for lane in lanes {
                if let reconnectAt = lane.reconnectAt {
                    if now >= reconnectAt {
                        do { try lane.connect() } catch { throw .transport(error, endpoint: lane.endpoint) }
                    }
                    continue
                }
                do {
                    while let request = try lane.nextWaitingRequest(now: now) {
                        lane.reply(to: request, body: whileBusy { handler(request) })
                    }
                } catch {
                    if error.code == .terminated { throw .transport(error, endpoint: lane.endpoint) }
                    lane.logger.warning("worker lane receive failed", metadata: ["flowbus.service": "\(service)", "flowbus.error": "\(error)"])
                }
                lane.keepAlive(now: now)
            }
        }
    }
}
