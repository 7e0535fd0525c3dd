import MessagePath
import ZeroMQ

/// One service: its workers and its waiting requests. Lives on the broker thread.
final class ServiceEntry {
    let name: Frame
    let displayName: String
    /// Idle workers, the one idle longest first (least recently used).
    var idle = FIFOQueue<WorkerEntry>()
    var workerCount = 0
    var everHadWorker = false
    var waiting = FIFOQueue<WaitingRequest>()

    init(name: Frame) {
        self.name = name
        self.displayName = String(decoding: name, as: UTF8.self)
    }
}

/// One registered worker. Lives on the broker thread.
final class WorkerEntry {
    let identity: Frame
    let service: ServiceEntry
    var lastHeard: MonotonicTime
    var lastSent: MonotonicTime
    /// The client whose request this worker holds; nil while idle.
    var inFlightClient: Frame?
    var served = 0

    init(identity: Frame, service: ServiceEntry, now: MonotonicTime) {
        self.identity = identity
        self.service = service
        self.lastHeard = now
        self.lastSent = now
    }
}

/// A client request waiting for a worker: the message as received (identity first) and where its body starts.
struct WaitingRequest {
    var message: [Frame]
    var bodyStart: Int
    var expiresAt: MonotonicTime

    var client: Frame { message[0] }
}
