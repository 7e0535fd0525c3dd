import Logging
import MessagePath
import Synchronization
import ZeroMQ

extension CloneAgentLoop {
    /// Sends ICANHAZ for the next subtree once its subscription is proven in place, or `probeWait`
    /// after it could be (see CloneAgentLoop+Probe); one at a time.
    func requestNextSnapshot(now: MonotonicTime) throws(ZMQError) {
        guard inFlight == nil, !serverLost, let subtree = pendingSyncs.first else { return }
        guard let index = subscriptions.firstIndex(where: { $0.subtree == subtree }) else {
            pendingSyncs.removeFirst()
            return
        }
        let unproven = !subscriptions[index].proven
        if unproven {
            guard let deadline = probeDeadline(index), deadline <= now else { return }
        }
        guard try snapshot.send(CloneMessage.icanhaz(subtree: subtree).frames, dontWait: true) else { return }
        pendingSyncs.removeFirst()
        subscriptions[index].phase = .syncing
        subscriptions[index].snapshotUnproven = unproven
        subscriptions[index].proof = nil
        if unproven {
            statistics.unprovenSnapshots += 1
            logOnce("unproven-snapshot", "clone agent: no HUGZ within \(configuration.probeWait) of subscribing to '\(subtree)'; asking for its snapshot anyway and checking it against the first message that comes")
        }
        inFlight = SnapshotInFlight(subtree: subtree, deadline: now + configuration.serverTimeout)
    }

    func drainSnapshot() throws(ZMQError) {
        let limit = configuration.maxValueBytes + 64 * 1024
        var handled = 0
        while handled < configuration.batchLimit,
              let message = try snapshot.receiveMessage(dontWait: true, maxFrames: 5, maxBytes: limit) {
            handled += 1
            guard !message.truncated else {
                countBadInput(.oversize(bytes: message.totalBytes, limit: limit), channel: "snapshot")
                continue
            }
            if message.frames.count == 5, message.frames[0] == CloneMessage.kthxbaiCommand, !message.frames[3].isEmpty,
               let refusal = (try? CloneProperties(decoding: message.frames[3]))?[CloneProperties.refusedName] {
                statistics.snapshotsRefused += 1
                shared.refusal.withLock { $0 = (String(decoding: message.frames[4], as: UTF8.self), refusal) }
                if logLimiter.shouldLog(peer: message.frames[4], kind: "refused") {
                    logger.error("clone agent: the server refused the snapshot of '\(message.frames[4].printable)': \(refusal) (the host's own user, on its machine, reads everything through the run directory's ipc endpoints)", metadata: ["flowbus.service": "clone-agent"])
                }
            }
            do {
                let (decoded, tolerated) = try CloneMessage.decodeLiberally(
                    message.frames, on: .snapshotReply, maxValueBytes: configuration.maxValueBytes)
                if let tolerated { tolerate(tolerated) }
                switch decoded {
                case .kvsync(let key, let sequence, let value):
                    guard inFlight != nil, key.utf8.starts(with: inFlight!.subtree.utf8) else {
                        badInput[CloneBadInput.unexpected.index] += 1
                        continue
                    }
                    statistics.snapshotEntriesReceived += 1
                    inFlight!.entries[key] = value.isEmpty ? nil : CloneEntry(key: key, value: value, sequence: sequence)
                case .kthxbai(let sequence, let subtree):
                    guard let flight = inFlight, flight.subtree == subtree || subtree.isEmpty else {
                        badInput[CloneBadInput.unexpected.index] += 1
                        continue
                    }
                    // One request at a time on a socket renewed when one is abandoned: this ends it.
                    if subtree != flight.subtree { tolerate(.kthxbaiWithoutSubtree) }
                    heardFromServer = true
                    inFlight = nil
                    completeSnapshot(flight, sequence: sequence)
                default:
                    badInput[CloneBadInput.unexpected.index] += 1
                }
            } catch {
                countBadInput(error, channel: "snapshot")
            }
        }
    }

    /// Makes the map under the subtree equal to the snapshot (reporting only what changed), then
    /// replays the live updates buffered meanwhile that are newer than the snapshot.
    private func completeSnapshot(_ flight: SnapshotInFlight, sequence: UInt64) {
        guard let index = subscriptions.firstIndex(where: { $0.subtree == flight.subtree }) else { return }
        if subscriptions[index].overflowed {
            // Live updates were lost while the snapshot travelled: it cannot be completed.
            markForResync(index)
            return
        }
        publishChanges()
        let subtree = subscriptions[index].subtreeBytes
        // What this agent had seen before the snapshot: a key whose value it does not hold
        // (`keepValues`) changed since only if the snapshot's entry is newer than that.
        let seen = subscriptions[index].lastSequence
        let (deliveries, due) = shared.view.withLock { view in
            var updates: [CloneUpdate] = []
            for (key, entry) in view.store where key.text.utf8.starts(with: subtree) && flight.entries[key.text] == nil {
                updates.append(CloneUpdate(
                    key: key.text, value: [], sequence: max(sequence, entry.sequence), isDelete: true, fromSnapshot: true))
            }
            for (key, entry) in flight.entries {
                if let held = view.store[AgentKey(key)] {
                    if view.value(of: held, key: key) == entry.value { continue }
                } else if view.keeps?(key) == false, entry.sequence <= seen {
                    continue
                }
                updates.append(CloneUpdate(
                    key: key, value: entry.value, sequence: entry.sequence, isDelete: false, fromSnapshot: true))
            }
            updates.sort { $0.key < $1.key }
            return (view.apply(updates), view.packedValues.nextDue)
        }
        // Delivered outside the lock (see publishChanges).
        packDue = due
        for (observer, updates) in deliveries { observer.deliver(updates) }
        statistics.snapshotsCompleted += 1
        subscriptions[index].phase = .synced
        subscriptions[index].hasSynced = true
        subscriptions[index].lastSequence = sequence
        subscriptions[index].snapshotSequence = sequence
        subscriptions[index].sessions = [:]
        let buffered = subscriptions[index].buffer
        subscriptions[index].buffer = []
        for record in buffered where !apply(record, to: index, live: false) { break }
        settleUnprovenSnapshot(index)
        publishChanges()
        updateSynced()
    }
}
