import MessagePath
import ZeroMQ

/// How a clone server behaves; the defaults suit one machine.
public struct CloneServerConfiguration: Sendable {
    /// A HUGZ goes out when nothing was published for this long (12/CHP suggests one second).
    public var hugzInterval: Duration = .seconds(1)
    /// The largest value a KVSET may carry.
    public var maxValueBytes = 1 << 20
    /// Where the map is kept on disk (`CloneJournal`): the server starts from what the file holds
    /// and appends every change it applies (writes with a ttl excepted: they are ephemeral by
    /// nature). Nil: the map lives in memory only.
    public var journalPath: String?
    /// The journal is rewritten with the live entries only once it is past this size and four
    /// times their size.
    public var journalCompactionBytes = 64 << 20
    /// Quotas: one session's keys (`/s/<id>/…`) may hold at most this many bytes (keys and
    /// values) and this many keys, and the whole map this many bytes. A write past one is refused
    /// (counted as `quotaRefused`, logged), never stored; deletes always pass.
    public var maxSessionBytes = 4 << 20
    public var maxSessionKeys = 1024
    public var maxStoreBytes = 512 << 20
    /// Every value written under one of these key prefixes must end with its envelope check
    /// (`WireCheck`; Protocols/README.md §5). One without it, or whose check disagrees, arrived
    /// damaged: it is not applied, not confirmed (its writer sends it again) and counted
    /// (`damagedWrites`). Deletes (empty values) carry no check. Empty (a plain 12/CHP server,
    /// whose values are anything): nothing is checked. A Flowbus host names its trees here.
    public var checkedPrefixes: [String] = []
    /// ZMQ_MAXMSGSIZE on every socket: libzmq drops a peer that sends a larger frame.
    public var transportMaxMessageBytes = 4 << 20
    /// Messages queued per subscriber before the publisher must drop for that subscriber.
    public var publisherHighWaterMark = 500_000
    /// KVSETs queued on the collector before writers' queues fill up.
    public var collectorHighWaterMark = 500_000
    /// Snapshot messages queued per client; a snapshot that does not fit is cut short (the client retries).
    public var snapshotHighWaterMark = 1_000_000
    /// At most this many messages are taken from one socket before the loop looks at the others.
    public var batchLimit = 4096
    /// A CURVE secret key makes all three sockets CURVE servers.
    public var curveSecretKey: CurveKey?
    /// With `curveSecretKey`: ipc endpoints are bound without CURVE (as `BrokerConfiguration.plainIPC`).
    public var plainIPC = false
    /// The ZAP domain of all three sockets (a ZAP handler must be running in the context for CURVE).
    public var zapDomain: String?
    /// Who may do what, by the class of peer the ZAP handler's User-Id names (needs `zapDomain`):
    /// only plugins and the host write; a client reads its own session's `/s/<id>/` and the public
    /// subtrees, never every session. nil is open mode: every peer may do everything.
    public var access: BusAccess?
    /// Closed mode: how often one client (by its User-Id: its address, or its CURVE key) may ask
    /// for a snapshot. Past it the request is dropped and counted (`snapshotsRateLimited`); the
    /// client's agent asks again after its timeout. Plugins, the host and operators are not limited.
    public var snapshotRate = RateLimit(perSecond: 50, burst: 200)
    /// More endpoints the three sockets also bind (e.g. ipc ones in the run directory for the
    /// host's own plugins, beside public tcp ones).
    public var additionalEndpoints: [CloneEndpoints] = []
    /// Bad input is logged at most once per peer and kind in this period; every case is counted.
    public var badInputLogPeriod: Duration = .seconds(10)
    /// A value unchanged for this long is kept as its differences from a similar value
    /// (`ValueDeltas`: its siblings', or the same path's in another session), unpacked again for
    /// each snapshot that sends it. Nil: values are kept as they came.
    public var packValuesAfter: Duration? = .seconds(1)
    /// How often the loop publishes its counters for `statistics`.
    public var statisticsInterval: Duration = .milliseconds(20)
    /// Sees every change published under `/s/` (on the server thread: hand it on, never block).
    public var sessionObserver: (@Sendable (CloneSessionUpdate) -> Void)?

    public init() {}

    func validate() throws(CloneStartError) {
        guard hugzInterval > .zero else { throw .invalidConfiguration("hugzInterval must be positive, e.g. 1 s") }
        guard maxValueBytes > 0, maxValueBytes < transportMaxMessageBytes else {
            throw .invalidConfiguration("maxValueBytes must be positive and below transportMaxMessageBytes (\(transportMaxMessageBytes))")
        }
        guard publisherHighWaterMark >= 0, collectorHighWaterMark >= 0, snapshotHighWaterMark >= 0, batchLimit > 0 else {
            throw .invalidConfiguration("high-water marks must be zero (unlimited) or positive, batchLimit positive")
        }
    }
}
