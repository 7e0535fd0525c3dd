import MessagePath
import ZeroMQ

/// One service: its workers and its waiting requests. Lives on the broker thread.
final class ServiceEntry {
    let name: Frame
    let displayName: String
    /// Whether `BrokerConfiguration.observer` sees this service's traffic; decided once, here.
    let observed: Bool
    /// Idle workers, the one idle longest first (least recently used).
    var idle = FIFOQueue<WorkerEntry>()
    var workerCount = 0
    var everHadWorker = false
    var waiting = FIFOQueue<WaitingRequest>()

    init(name: Frame, observed: Bool = false) {
        self.name = name
        self.observed = observed
        self.displayName = Self.displayName(of: name)
    }

    /// The name as text when it is valid UTF-8 without control characters, else 0x-hex,
    /// so that distinct byte names never share a key in the statistics.
    static func displayName(of name: Frame) -> String {
        if let text = String(validating: name, as: UTF8.self),
           !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            return text
        }
        return name.printable
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
