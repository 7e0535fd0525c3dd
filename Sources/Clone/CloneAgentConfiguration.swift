import MessagePath
import ZeroMQ

/// How a clone agent behaves; the defaults match a server with the default HUGZ interval.
public struct CloneAgentConfiguration: Sendable {
    /// The subtrees to mirror at start (`""` is everything, `/s/abc/` one session). More can be added
    /// with `subscribe(_:)`.
    public var subtrees: [String] = [""]
    /// Nothing heard (no HUGZ, no update) for this long means the server is gone; the agent resyncs
    /// when it is back. Applies once the server has sent a HUGZ: silence from one that never does
    /// is not a loss (a dropped connection still is). Also the time a snapshot may take before the
    /// request is sent again.
    public var serverTimeout: Duration = .seconds(3)
    /// How long, once connected to the publisher, a snapshot waits for a first message (HUGZ or an
    /// update) proving the subscription reached the server. A Flowbus server answers every
    /// subscription with a HUGZ at once; past this wait (a server that sends none, like the zguide's
    /// clonesrv5) the snapshot is asked for anyway and checked against the first message that comes.
    public var probeWait: Duration = .milliseconds(500)
    /// Live updates kept while a snapshot is on its way; past this the snapshot is asked for again.
    public var maxBufferedUpdates = 1_000_000
    /// Writes kept while the collector is not reachable; past this `set` throws.
    public var maxHeldWrites = 100_000
    /// The largest value `set` accepts (the server's limit should be the same).
    public var maxValueBytes = 1 << 20
    /// ZMQ_MAXMSGSIZE on every socket.
    public var transportMaxMessageBytes = 4 << 20
    /// Messages the subscriber queues before libzmq drops (a gap the agent then repairs).
    public var receiveHighWaterMark = 500_000
    /// At most this many messages are taken from one socket before the loop looks at the others.
    public var batchLimit = 4096
    /// Writes taken from the queue together go to a server that takes batches (a Flowbus server
    /// says so) as one KVSETS message instead of a KVSET each (`KVSetBatch`); a lone write, and
    /// every write to another 12/CHP server, goes as a KVSET. Off: always KVSETs.
    public var batchWrites = true
    /// A thread that queues writes while the agent's thread sleeps sends them itself, without
    /// waking the agent's thread (`CloneAgentShared.WriterShortcut`), when nothing waits before
    /// them and none went in the last 100 µs (a burst is left to the agent's thread, which sends
    /// it in batches). Off: the agent's thread sends every write.
    public var writersSend = true
    /// CURVE: the server's public key and this client's key pair, for all three sockets.
    public var curve: (serverKey: CurveKey, keyPair: CurveKeyPair)?
    /// A session capability (`drive.…` or `watch.…` from openSession) its connections present, so
    /// a closed host lets this client read that session's `/s/<id>/`.
    public var capability: String?
    /// Fault rules on the agent's incoming KVPUBs (scope `.key`): a dropped update never reaches
    /// this agent only, as a lossy link would, so the agent's gap detection can be exercised.
    public var incomingFaults: FaultRules?
    /// Ask the server to confirm each write (KVSET property `ack=<agent>`; a Flowbus server answers
    /// on the publisher under `ACK/<agent>`) and send again one not confirmed in time, so a write
    /// lost on the way is not lost for good. The server applies a write it has seen once only.
    /// Only for Flowbus servers: other 12/CHP servers never confirm (writes would be sent
    /// `confirmTries` times).
    public var confirmWrites = false
    /// The first wait for a confirmation; it doubles with each try, up to 4 s.
    public var confirmAfter: Duration = .milliseconds(500)
    /// Tries of one write (while the collector is connected) before it is given up, logged and counted.
    public var confirmTries = 12
    /// The writer and its incarnation (`wgen`): once a newer incarnation of the same writer has
    /// written, the server refuses this one's later writes. Nil: not said.
    public var generation: (writer: String, number: UInt64)?
    /// Bad input and resyncs are logged at most once per kind in this period; all are counted.
    public var logPeriod: Duration = .seconds(10)
    /// How often the loop publishes its counters for `statistics`.
    public var statisticsInterval: Duration = .milliseconds(20)
    /// A value the map has held unchanged for this long is kept packed against a similar one
    /// (`ValueDeltas`, as the server does), and unpacked for each read. Nil: kept as it came.
    public var packValuesAfter: Duration? = .seconds(1)

    public init(subtrees: [String] = [""]) {
        self.subtrees = subtrees
    }

    func validate() throws(CloneStartError) {
        guard serverTimeout > .zero else { throw .invalidConfiguration("serverTimeout must be positive, e.g. 3 s") }
        if let generation, generation.writer.isEmpty || generation.writer.contains("\n") {
            throw .invalidConfiguration("the writer of generation must be a one-line name such as coord-app/0, got '\(generation.writer)'")
        }
        guard confirmAfter > .zero, confirmTries > 0 else {
            throw .invalidConfiguration("confirmAfter and confirmTries must be positive, e.g. 500 ms and 12")
        }
        guard probeWait >= .zero else { throw .invalidConfiguration("probeWait must not be negative, e.g. 500 ms") }
        guard maxBufferedUpdates > 0, maxHeldWrites > 0, maxValueBytes > 0, batchLimit > 0 else {
            throw .invalidConfiguration("maxBufferedUpdates, maxHeldWrites, maxValueBytes and batchLimit must be positive")
        }
        for subtree in subtrees {
            do {
                try CloneKeyRules.validate(subtree: subtree)
            } catch {
                throw .invalidConfiguration("\(error)")
            }
        }
    }
}
