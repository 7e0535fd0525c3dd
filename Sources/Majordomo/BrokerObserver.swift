import MessagePath
import Glibc
import ZeroMQ

/// Sees the requests and replies of chosen services as they pass the broker (the host records
/// session histories with it). `observe` runs on the broker thread: it must only hand the
/// observation on (a lock and an append), never decode, log or block.
public struct BrokerObserver: Sendable {
    /// Services whose name starts with one of these are observed. The choice is made once per
    /// service, when the broker first meets its name; the others cost one Bool test per message.
    public var servicePrefixes: [Frame]
    public var observe: @Sendable (BrokerObservation) -> Void

    public init(servicePrefixes: [String], observe: @escaping @Sendable (BrokerObservation) -> Void) {
        self.servicePrefixes = servicePrefixes.map { Array($0.utf8) }
        self.observe = observe
    }

    func observes(_ service: Frame) -> Bool {
        servicePrefixes.contains { service.starts(with: $0) }
    }
}

/// One message of an observed service, as the broker handled it.
public struct BrokerObservation: Sendable {
    public enum Kind: Sendable, Equatable {
        /// A client request, about to be routed (to an idle worker or the service's queue).
        case request
        /// A worker's reply, on its way to the client.
        case reply
        /// The broker answered the client itself (expired, queue full, too large); `body` is its answer.
        case rejected(reason: String)
        /// A fault rule acted on the request before routing: dropped it, or delayed, duplicated,
        /// reordered or damaged it (it is observed again as a `request` when routed).
        case faulted(FaultVerdict)
    }

    public var kind: Kind
    public var service: Frame
    /// The client's routing id (the requester's, also for replies).
    public var client: Frame
    /// The worker's routing id for a reply; empty otherwise.
    public var worker: Frame
    /// The first body frame (one Envelope for Flowbus services). Shared with the message, not copied.
    public var body: Frame
    /// The host's wall clock when the broker handled it.
    public var atUnixNanos: Int64

    public init(kind: Kind, service: Frame, client: Frame, worker: Frame = [], body: Frame, atUnixNanos: Int64) {
        self.kind = kind
        self.service = service
        self.client = client
        self.worker = worker
        self.body = body
        self.atUnixNanos = atUnixNanos
    }

    /// The wall clock, in nanoseconds since 1970 (one vDSO call).
    public static func wallClockNanos() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) &* 1_000_000_000 &+ Int64(spec.tv_nsec)
    }
}

extension BrokerLoop {
    /// Hands one observation to the observer; callers test `ServiceEntry.observed` (or the prefixes) first.
    func observe(_ kind: BrokerObservation.Kind, service: Frame, client: Frame, worker: Frame = [], frames: [Frame], bodyStart: Int) {
        observe(kind, service: service, client: client, worker: worker, body: bodyStart < frames.count ? frames[bodyStart] : [])
    }

    func observe(_ kind: BrokerObservation.Kind, service: Frame, client: Frame, worker: Frame = [], body: Frame) {
        guard let observer = configuration.observer else { return }
        observer.observe(BrokerObservation(
            kind: kind, service: service, client: client, worker: worker, body: body,
            atUnixNanos: BrokerObservation.wallClockNanos()))
    }
}
