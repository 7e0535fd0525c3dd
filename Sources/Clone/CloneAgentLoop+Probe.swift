import MessagePath

// The slow joiner: a SUB's subscription reaches the server some time after `subscribe` returns,
// and an update published before it arrives is never sent to us. 12/CHP's order (subscribe, then
// ICANHAZ, then keep only updates newer than the KTHXBAI) loses nothing once the subscription is
// in place when the server takes the snapshot. A message on the subscriber proves that, and a
// Flowbus server answers every subscription with a HUGZ at once. A server that sends none (the
// zguide's clonesrv5) is asked after `probeWait`; the first message that comes then shows whether
// an update could have slipped in between, and if so the snapshot is asked for again.
extension CloneAgentLoop {
    /// The first message a subscription received after its snapshot was asked for unproven.
    enum Proof {
        /// A KVPUB under the subtree, with its sequence.
        case update(UInt64)
        /// A HUGZ, with its sequence: 0 from a Flowbus server, the current one from clonesrv6.
        case hugz(UInt64)

        /// Whether nothing under the subtree can be missing from a snapshot taken at `snapshot`.
        func covers(snapshot: UInt64) -> Bool {
            switch self {
            // Received, so the subscription was in place when it was published: at or before the
            // snapshot, or right after it with no sequence in between.
            case .update(let sequence): sequence <= snapshot + 1
            // The server had published nothing past the snapshot when it sent it; 0 tells nothing.
            case .hugz(let sequence): sequence > 0 && sequence <= snapshot
            }
        }
    }

    /// When the snapshot of `index` may be asked for without proof: `probeWait` after both the
    /// connection and the subscription are in place. Nil while not connected.
    func probeDeadline(_ index: Int) -> MonotonicTime? {
        guard let connectedAt else { return nil }
        return max(connectedAt, subscriptions[index].subscribedAt) + configuration.probeWait
    }

    /// The probe deadline of the next snapshot to ask for, if it waits for one.
    func probeDeadline() -> MonotonicTime? {
        guard inFlight == nil, !serverLost, let subtree = pendingSyncs.first,
              let index = subscriptions.firstIndex(where: { $0.subtree == subtree }), !subscriptions[index].proven
        else { return nil }
        return probeDeadline(index)
    }

    /// A HUGZ proves every subscription: it is subscribed after them (again after each new one).
    func provedByHugz(sequence: UInt64) {
        serverSendsHugz = true
        for index in subscriptions.indices { proved(index, by: .hugz(sequence)) }
    }

    func proved(_ index: Int, by proof: Proof) {
        guard !subscriptions[index].proven else { return }
        subscriptions[index].proven = true
        guard subscriptions[index].snapshotUnproven else { return }
        subscriptions[index].proof = proof
        // While the snapshot travels its sequence is unknown: settled when its KTHXBAI comes.
        if subscriptions[index].phase == .synced { settleUnprovenSnapshot(index) }
    }

    /// Keeps the snapshot if the proof shows nothing can be missing from it, else asks again.
    func settleUnprovenSnapshot(_ index: Int) {
        guard subscriptions[index].snapshotUnproven, let proof = subscriptions[index].proof else { return }
        subscriptions[index].snapshotUnproven = false
        subscriptions[index].proof = nil
        if proof.covers(snapshot: subscriptions[index].snapshotSequence) {
            statistics.unprovenSnapshotsConfirmed += 1
            return
        }
        statistics.unprovenSnapshotsRetaken += 1
        logOnce("unproven-retake", "clone agent: an update under '\(subscriptions[index].subtree)' may have been published before the server had our subscription (first message \(proof) after snapshot \(subscriptions[index].snapshotSequence)); asking for the snapshot again")
        markForResync(index, countedAsResync: false)
    }
}
