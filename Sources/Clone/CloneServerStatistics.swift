import MessagePath

/// What a clone server has done since it started.
public struct CloneServerStatistics: Sendable, Codable, Equatable {
    /// The global sequence of the last KVPUB.
    public var sequence: UInt64 = 0
    /// Keys currently stored.
    public var keysStored = 0
    /// Sessions (`/s/<id>/`) holding keys.
    public var sessions = 0
    /// KVPUBs sent, deletes and ttl expiries included.
    public var updatesPublished = 0
    /// Of those, deletes (empty values).
    public var deletesPublished = 0
    /// KTHXBAIs sent (complete snapshots).
    public var snapshotsServed = 0
    /// KVSYNCs sent.
    public var snapshotEntriesSent = 0
    /// Keys the snapshots looked at: with the subtree index, a session's snapshot reads that
    /// session's keys only (a subtree of the whole map, or `""`, reads them all).
    public var snapshotKeysRead = 0
    /// Snapshots cut short because the client's queue was full or the client had gone.
    public var snapshotsAborted = 0
    /// Keys deleted because their ttl expired.
    public var ttlExpiries = 0
    /// HUGZ sent.
    public var hugzSent = 0
    /// KVSETs a fault rule dropped: neither stored nor published.
    public var faultDropped = 0
    /// KVSETs a fault rule delayed, duplicated, reordered or damaged.
    public var faults = FaultTally()
    /// KVSETs dropped because their writer had already written the key later (`wseq`): delayed
    /// or reordered on the way, they would have put an older value back.
    public var staleWritesDropped = 0
    /// KVSETs dropped because a newer incarnation of their writer had written the key since
    /// (`wgen`): a replaced process's late write.
    public var fencedWrites = 0
    /// KVPUBs that at least one subscriber's full queue could not take (that subscriber sees a gap).
    public var publishBlocked = 0
    /// Keys restored from the journal at start; changes appended to it since; compactions; failures.
    public var journalRestored = 0
    public var journalAppends = 0
    public var journalCompactions = 0
    public var journalFailures = 0
    /// KVSETs refused because they would take a session or the map past its quota.
    public var quotaRefused = 0
    /// KVSETs whose value arrived without its check or with a wrong one (under `checkedPrefixes`):
    /// not applied, not confirmed, so their writers send them again.
    public var damagedWrites = 0
    /// Bytes (keys and values) the map holds.
    public var storeBytes = 0
    /// Values kept packed against a similar one (`packValuesAfter`), the bytes they hold so, and
    /// the bytes they would hold whole; the references they are packed against, and their bytes.
    public var valuesPacked = 0
    public var packedBytes = 0
    public var packedValueBytes = 0
    public var packReferences = 0
    public var packReferenceBytes = 0
    /// The bytes the packed values' deltas take in their arena, with the holes that replaced and
    /// deleted values left (compacted away once they are half of it).
    public var packArenaBytes = 0
    /// Confirmation messages (`ACK/<agent>`) sent, each for one agent's writes in one batch.
    public var acksSent = 0
    /// KVSETS batches taken from Flowbus agents, and the writes they held (each then counted as
    /// a KVSET would be).
    public var batchesReceived = 0
    public var batchedWrites = 0
    /// Writes sent again by their writer that had been applied already: confirmed, not applied twice.
    public var duplicateWrites = 0
    /// Subscription messages received on the publisher.
    public var subscriptionsReceived = 0
    /// Closed mode: KVSETs refused because the writer is not one of the host's plugins.
    public var writesRefused = 0
    /// Closed mode: snapshot requests refused because the subtree is not the client's to read.
    public var snapshotsRefused = 0
    /// Closed mode: snapshot requests dropped because their client asked faster than `snapshotRate`.
    public var snapshotsRateLimited = 0
    /// Closed mode: subscriptions not applied because the prefix is not the client's to read.
    public var subscriptionsRefused = 0
    /// Invalid input dropped, by kind (`CloneBadInput` raw values).
    public var badInput: [String: Int] = [:]

    public init() {}

    public func badInput(_ kind: CloneBadInput) -> Int { badInput[kind.rawValue, default: 0] }

    public var badInputTotal: Int { badInput.values.reduce(0, +) }
}
