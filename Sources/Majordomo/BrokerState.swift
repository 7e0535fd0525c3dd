import MessagePath
import ZeroMQ

/// One service: its workers and its waiting requests. Lives on the broker thread.
final class ServiceEntry {
    let name: Frame
    let displayName: String
    /// Whether `BrokerConfiguration.observer` sees this service's traffic; decided once, here.
    let observed: Bool
    /// Workers with room for another request, the one waiting longest first (least recently used).
    /// A 7/MDP worker (credit 1) is here while idle; a worker with credit N is here, once, while it
    /// holds fewer than N requests, and goes to the back each time it takes one (round robin).
    var ready = FIFOQueue<WorkerEntry>()
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
    /// `identity` as `BrokerHandle.workers` shows it, made once: the statistics published ten
    /// times a second list every worker, and a routing id in hex is a string per byte.
    private(set) lazy var printableIdentity = identity.printable
    let service: ServiceEntry
    var lastHeard: MonotonicTime
    var lastSent: MonotonicTime
    /// How many requests it takes at once: 1 as 7/MDP has it, N when its READY offered `credit=N`.
    let credit: Int
    /// The clients whose requests it holds, oldest first (a client may appear more than once).
    private(set) var inFlight: [Frame] = []
    /// Whether it is in its service's `ready` line.
    var queued = false
    var served = 0

    init(identity: Frame, service: ServiceEntry, credit: Int = 1, now: MonotonicTime) {
        self.identity = identity
        self.service = service
        self.credit = credit
        self.lastHeard = now
        self.lastSent = now
        inFlight.reserveCapacity(credit)
    }

    var hasRoom: Bool { inFlight.count < credit }

    /// When it was last handed a request.
    var lastDispatch = MonotonicTime(nanoseconds: 0)

    func took(requestOf client: Frame, at now: MonotonicTime) {
        inFlight.append(client)
        lastDispatch = now
    }

    /// Forgets the oldest requests it holds beyond `held`, which never reached it; returns how many.
    func release(downTo held: Int) -> Int {
        let lost = max(0, inFlight.count - held)
        inFlight.removeFirst(lost)
        return lost
    }

    /// Forgets one request of `client`; false when the worker holds none of it (a REPLY it may not send).
    func finished(requestOf client: Frame) -> Bool {
        guard let index = inFlight.firstIndex(of: client) else { return false }
        inFlight.remove(at: index)
        return true
    }
}

/// A client request waiting for a worker: the message as received (identity first) and where its body starts.
struct WaitingRequest {
    var message: [Frame]
    var bodyStart: Int
    var expiresAt: MonotonicTime

    var client: Frame { message[0] }
}

/// A service name or a peer's routing id as the broker's tables key them: hashed as one run of
/// bytes (`Hasher.combine(bytes:)`, SipHash as every Swift table), where `[UInt8]`'s own hashing
/// feeds the hasher a byte at a time, some 25 instructions a byte, twice a request.
struct FrameKey: Hashable {
    let frame: Frame

    init(_ frame: Frame) { self.frame = frame }

    func hash(into hasher: inout Hasher) {
        hasher.combine(frame.count)
        frame.withUnsafeBytes { hasher.combine(bytes: $0) }
    }
}
