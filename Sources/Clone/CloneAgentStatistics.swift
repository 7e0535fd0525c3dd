/// What a clone agent has done since it started.
public struct CloneAgentStatistics: Sendable, Codable, Equatable {
    /// KVPUBs received (HUGZ not included).
    public var updatesReceived = 0
    /// KVPUBs applied to the local map (live or replayed after a snapshot).
    public var updatesApplied = 0
    /// Of those, live ones the map took straight from the socket's bytes, none made into a
    /// `CloneUpdate` (the common way; not with observers, `keepValues` or an incoming fault rule).
    public var updatesAppliedInPlace = 0
    /// KVPUBs not newer than the snapshot or the last update (12/CHP says discard them).
    public var duplicatesDiscarded = 0
    public var hugzReceived = 0
    /// Complete snapshots (KTHXBAI received).
    public var snapshotsCompleted = 0
    public var snapshotEntriesReceived = 0
    /// Snapshots asked for again after the first one of a subtree: a gap, a lost server, an
    /// overflow (an unproven snapshot asked for again counts in `unprovenSnapshotsRetaken`).
    public var resyncs = 0
    /// Missed updates noticed: a broken session chain, a global sequence gap, or a sequence
    /// that went backwards (a restarted server).
    public var gapsDetected = 0
    /// Times the server went silent for `serverTimeout` (once it has sent a HUGZ) or the
    /// connection to it dropped.
    public var serverLosses = 0
    /// Snapshot requests that got no KTHXBAI in time and were sent again.
    public var snapshotTimeouts = 0
    /// Snapshots the server refused (closed mode: the subtree is not this client's to read).
    public var snapshotsRefused = 0
    /// Times the buffer of live updates filled while a snapshot was on its way.
    public var bufferOverflows = 0
    /// Incoming KVPUBs dropped by `incomingFaults`.
    public var faultDropped = 0
    /// KVSETs handed to `set`/`delete`.
    public var writesQueued = 0
    /// Times the agent's thread took writes from the queue (writes queued together go in one).
    public var outboxTakes = 0
    /// Of them, times the thread that queued writes sent them itself, the agent's thread asleep
    /// (`CloneAgentConfiguration.writersSend`).
    public var outboxTakesByWriters = 0
    /// KVSETs sent to the collector.
    public var writesSent = 0
    /// KVSETs waiting now for the collector (not connected yet, or its queue is full).
    public var writesHeld = 0
    /// KVSETS batches sent (writes taken together, to a server that takes them), and the writes
    /// they held; `writesSent` counts these too.
    public var batchesSent = 0
    public var writesBatched = 0
    /// Times a KVSET had to wait because the collector's queue was full.
    public var writesBlocked = 0
    /// Writes the server confirmed (`confirmWrites`).
    public var writesConfirmed = 0
    /// Writes sent again because no confirmation came in time.
    public var writesResent = 0
    /// Writes not confirmed after every try: given up, logged.
    public var writesAbandoned = 0
    /// Writes not confirmed yet.
    public var writesUnconfirmed = 0
    /// Invalid input dropped, by kind (`CloneBadInput` raw values).
    public var badInput: [String: Int] = [:]
    /// Messages accepted although they differ from 12/CHP as the zguide's reference servers do,
    /// by kind (`CloneLeniency` raw values).
    public var tolerated: [String: Int] = [:]
    /// Snapshots asked for after `probeWait` with no message yet proving the subscription in
    /// place (a server that sends no HUGZ, like the zguide's clonesrv5).
    public var unprovenSnapshots = 0
    /// Of those, the ones the first message from the publisher then showed complete.
    public var unprovenSnapshotsConfirmed = 0
    /// Of those, the ones asked for again because an update may have been published before the
    /// subscription reached the server.
    public var unprovenSnapshotsRetaken = 0

    public init() {}

    public func badInput(_ kind: CloneBadInput) -> Int { badInput[kind.rawValue, default: 0] }

    public func tolerated(_ kind: CloneLeniency) -> Int { tolerated[kind.rawValue, default: 0] }
}
