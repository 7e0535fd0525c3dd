import Foundation
import Majordomo
import MessagePath
import Supervision
import Synchronization

/// Tells the supervisor when the broker last heard from each plugin process: Flowbus
/// workers name themselves `<plugin>/<pid>/<n>`, so a worker's routing id carries its pid.
final class HeartbeatBridge: Sendable {
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    private init() {}

    static func start(broker: BrokerHandle, supervisor: Supervisor, interval: Duration = .milliseconds(250)) -> HeartbeatBridge {
        let bridge = HeartbeatBridge()
        let thread = Thread {
            ThreadName.set("fb-heartbeats")
            defer { bridge.finished.signal() }
            while !bridge.stopping.load(ordering: .relaxed) {
                // What the broker published last: asking for a fresh list would wake the broker
                // and spin here until it published, four times a second for nothing.
                for worker in broker.lastWorkers {
                    if let pid = pid(fromRoutingID: worker.routingID) {
                        _ = supervisor.recordHeartbeat(pid: pid, at: worker.lastHeard)
                    }
                }
                Thread.sleep(forTimeInterval: interval.secondsValue)
            }
        }
        thread.name = "flowbus-heartbeats"
        thread.start()
        return bridge
    }

    func stop() {
        stopping.store(true, ordering: .relaxed)
        finished.wait()
    }

    static func pid(fromRoutingID id: String) -> Int32? {
        let parts = id.split(separator: "/")
        guard parts.count == 3 else { return nil }
        return Int32(parts[1])
    }
}

extension Duration {
    var secondsValue: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) * 1e-18
    }
}
