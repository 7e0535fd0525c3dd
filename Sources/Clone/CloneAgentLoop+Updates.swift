import MessagePath
import Synchronization
import ZeroMQ

extension CloneAgentLoop {
    func drainSubscriber() throws(ZMQError) {
        let limit = configuration.maxValueBytes + 64 * 1024
        let maxValueBytes = configuration.maxValueBytes
        var handled = 0
        // An update is decoded from the bytes libzmq holds and applied there: no array is made
        // for its key, sequence, UUID or properties, nor a list of its frames, and the record is
        // not moved out through an enum and copied again. Another kind of message (a HUGZ, a
        // write's confirmation), or a malformed one, comes out as its frames.
        while handled < configuration.batchLimit,
              let whole = try subscriber.receiveParts(dontWait: true, maxParts: 5, maxBytes: limit, { parts -> [Frame]? in
                  // Any message says the server is alive: the clock is read once a batch, not a message.
                  if handled == 0 { heard() }
                  if parts.truncated {
                      countBadInput(.oversize(bytes: parts.totalBytes, limit: limit), channel: "subscriber")
                      return nil
                  }
                  do throws(CloneDecodeError) {
                      if let update = try CloneMessage.publishedUpdate(parts, maxValueBytes: maxValueBytes) {
                          received(update)
                          return nil
                      }
                  } catch {
                      countBadInput(error, channel: "subscriber")
                      return nil
                  }
                  return parts.frames
              }) {
            handled += 1
            guard let frames = whole else { continue }
            if frames.first?.starts(with: Self.ackPrefix) == true {
                confirmed(frames)
                continue
            }
            do {
                let (decoded, tolerated) = try CloneMessage.decodeLiberally(
                    frames, on: .publisher, maxValueBytes: configuration.maxValueBytes)
                if let tolerated { tolerate(tolerated) }
                switch decoded {
                case .hugz(let sequence):
                    statistics.hugzReceived += 1
                    provedByHugz(sequence: sequence)
                case .kvpub(let record): received(CloneUpdate(published: record))
                default: break
                }
            } catch {
                countBadInput(error, channel: "subscriber")
            }
        }
    }

    /// Any message from the publisher: the server is alive.
    private func heard() {
        lastHeard = .now()
        heardFromServer = true
        if serverLost {
            serverLost = false
            logOnce("server-back", "clone server heard again; resyncing")
        }
    }

    private func received(_ update: consuming CloneUpdate) {
        statistics.updatesReceived += 1
        if let faults = configuration.incomingFaults, faults.isArmed,
           case .drop = faults.verdict(scope: .key, subject: update.key.utf8) {
            statistics.faultDropped += 1
            return
        }
        guard let index = subscriptions.firstIndex(where: { update.key.utf8HasPrefix($0.subtreeBytes) }) else {
            countBadInput(.invalidKey("'\(update.key)' lies in none of the subscribed subtrees"), channel: "subscriber")
            return
        }
        proved(index, by: .update(update.sequence))
        switch subscriptions[index].phase {
        case .synced:
            _ = apply(update, to: index, live: true)
        case .waiting, .syncing:
            if subscriptions[index].overflowed { return }
            if subscriptions[index].buffer.count >= configuration.maxBufferedUpdates {
                subscriptions[index].buffer = []
                subscriptions[index].overflowed = true
                statistics.bufferOverflows += 1
                return
            }
            subscriptions[index].buffer.append(update)
        }
    }

    /// Applies one KVPUB if it is newer than what the subscription has, checking the session chain
    /// (and, for the whole map, the global sequence). Returns false when it found a gap and resyncs.
    func apply(_ update: consuming CloneUpdate, to index: Int, live: Bool) -> Bool {
        let last = subscriptions[index].lastSequence
        guard update.sequence > last else {
            statistics.duplicatesDiscarded += 1
            if live {
                // Published before the snapshot this subscription synced from, and overtaken by
                // it: the snapshot comes on another connection than the updates, so an update the
                // server sent before it can still arrive after it. The snapshot holds its effect.
                // (Once a newer update is applied, nothing older can follow on the same connection.)
                // A restarted server is still told apart: its connection drops (the monitor's
                // `disconnected`) and it falls silent, and either makes the agent resync.
                if last == subscriptions[index].snapshotSequence { return true }
                // Live sequences only grow; going back means a new server with a new count.
                gap(index, "sequence \(update.sequence) after \(last) under '\(subscriptions[index].subtree)': the server restarted")
                return false
            }
            return true
        }
        if subscriptions[index].subtreeBytes.isEmpty && update.sequence != last + 1 {
            gap(index, "global sequence jumped from \(last) to \(update.sequence)")
            return false
        }
        if let previous = update.properties.sessionPrevious, let session = Self.session(of: update.key),
           session.utf8HasPrefix(subscriptions[index].subtreeBytes) {
            let intact = subscriptions[index].sessions[session].map { previous == $0 }
                ?? (previous <= subscriptions[index].snapshotSequence)
            guard intact else {
                gap(index, "session chain of '\(session)' broken: sprev \(previous) at sequence \(update.sequence)")
                return false
            }
            subscriptions[index].sessions[session] = update.sequence
        }
        subscriptions[index].lastSequence = update.sequence
        statistics.updatesApplied += 1
        changes.append(update)
        return true
    }

    static func session(of key: String) -> String? {
        var key = key
        return key.withUTF8 { bytes in
            CloneKeyRules.sessionPrefixLength(UnsafeRawBufferPointer(bytes)).map {
                String(decoding: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[0..<$0]), as: UTF8.self)
            }
        }
    }

    func gap(_ index: Int, _ reason: String) {
        statistics.gapsDetected += 1
        logOnce("gap", "clone agent missed an update (\(reason)); resyncing the subtree")
        markForResync(index)
    }

    /// Forgets what the subscription knows beyond its map and queues a new snapshot for it.
    func markForResync(_ index: Int, countedAsResync: Bool = true) {
        if countedAsResync && subscriptions[index].phase == .synced { statistics.resyncs += 1 }
        subscriptions[index].phase = .waiting
        subscriptions[index].buffer = []
        subscriptions[index].overflowed = false
        subscriptions[index].sessions = [:]
        subscriptions[index].snapshotUnproven = false
        subscriptions[index].proof = nil
        let subtree = subscriptions[index].subtree
        if !pendingSyncs.contains(subtree) && inFlight?.subtree != subtree {
            pendingSyncs.append(subtree)
        }
        shared.synced.store(false, ordering: .releasing)
    }

    /// Hands the changes of this turn to the map (under its lock), then to the update streams.
    /// Never yield under the lock: cancelling a stream runs its onTermination, which takes the
    /// lock, while the runtime holds the waiting task's lock that a yield needs (a deadlock seen
    /// when a SessionClient stopped during an update). Only this thread publishes, so streams
    /// still get changes in order.
    func publishChanges() {
        guard !changes.isEmpty else { return }
        let (deliveries, due) = shared.view.withLock { ($0.apply(changes), $0.packedValues.nextDue) }
        packDue = due
        for (observer, updates) in deliveries { observer.deliver(updates) }
        changes.removeAll(keepingCapacity: true)
    }
}
