import Foundation
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
        var other: [Frame]?
        while handled < configuration.batchLimit,
              try subscriber.receiveParts(dontWait: true, maxParts: 5, maxBytes: limit, { (parts: ReceivedParts) -> Void in
                  // Any message says the server is alive: the clock is read once a batch, not a message.
                  if handled == 0 { heard() }
                  if parts.truncated {
                      countBadInput(.oversize(bytes: parts.totalBytes, limit: limit), channel: "subscriber")
                      return
                  }
                  do throws(CloneDecodeError) {
                      if let (key, sequence, uuid, properties) = try CloneMessage.publishedHeader(parts, maxValueBytes: maxValueBytes) {
                          received(key: AgentKey(key), sequence: sequence, uuid: uuid, properties: properties,
                                   value: parts[4])
                          return
                      }
                  } catch {
                      countBadInput(error, channel: "subscriber")
                      return
                  }
                  other = parts.frames
              }) {
            handled += 1
            guard let frames = other.take() else { continue }
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

    /// A live KVPUB, its value where the socket holds it. On the common way (a synced subtree, no
    /// fault rule, no change waiting for the map) it goes straight into the map, its value copied
    /// over the one it replaces when that is as long and held by nothing else: no change is made
    /// of it, and no array allocated and freed. Otherwise, and when the map has observers (who
    /// take changes) or keeps only some keys, it is made the change `received` takes, in its turn.
    private func received(
        key: AgentKey, sequence: UInt64, uuid: UUID?, properties: CloneProperties, value: UnsafeRawBufferPointer
    ) {
        func whole() -> CloneUpdate {
            CloneUpdate(key: key.text, value: value.isEmpty ? [] : Array(value), sequence: sequence, properties: properties,
                        uuid: uuid, isDelete: value.isEmpty, fromSnapshot: false)
        }
        guard changes.isEmpty, configuration.incomingFaults?.isArmed != true,
              let index = subscriptions.firstIndex(where: { key.text.utf8HasPrefix($0.subtreeBytes) }),
              subscriptions[index].phase == .synced else {
            return received(whole())
        }
        statistics.updatesReceived += 1
        proved(index, by: .update(sequence))
        guard admit(sequence, key: key.text, properties: properties, to: index, live: true) == .apply else { return }
        let bytes = LentBytes(value)
        let (applied, due) = shared.view.withLock { view in
            let applied = view.applyInPlace(key: key, value: bytes.bytes, sequence: sequence, uuid: uuid, properties: properties)
            return (applied, view.packedValues.nextDue)
        }
        if applied {
            packDue = due
            statistics.updatesAppliedInPlace += 1
        } else {
            changes.append(whole())
        }
    }

    /// What `apply` does with a KVPUB, from its sequence and session chain.
    enum Admission {
        /// Newer than what the subscription has: into the map.
        case apply
        /// Older, and explained: left out.
        case skip
        /// A gap: the subscription resyncs.
        case gap
    }

    /// Applies one KVPUB if it is newer than what the subscription has, checking the session chain
    /// (and, for the whole map, the global sequence). Returns false when it found a gap and resyncs.
    func apply(_ update: consuming CloneUpdate, to index: Int, live: Bool) -> Bool {
        switch admit(update.sequence, key: update.key, properties: update.properties, to: index, live: live) {
        case .apply:
            changes.append(update)
            return true
        case .skip:
            return true
        case .gap:
            return false
        }
    }

    /// Whether a KVPUB with this sequence, under this key and with these properties, goes into
    /// the subscription's map; counts it as applied (and moves the subscription's sequence and
    /// session chain on) when it does, and starts a resync on a gap.
    func admit(_ sequence: UInt64, key: String, properties: CloneProperties, to index: Int, live: Bool) -> Admission {
        let last = subscriptions[index].lastSequence
        guard sequence > last else {
            statistics.duplicatesDiscarded += 1
            if live {
                // Published before the snapshot this subscription synced from, and overtaken by
                // it: the snapshot comes on another connection than the updates, so an update the
                // server sent before it can still arrive after it. The snapshot holds its effect.
                // (Once a newer update is applied, nothing older can follow on the same connection.)
                // A restarted server is still told apart: its connection drops (the monitor's
                // `disconnected`) and it falls silent, and either makes the agent resync.
                if last == subscriptions[index].snapshotSequence { return .skip }
                // Live sequences only grow; going back means a new server with a new count.
                gap(index, "sequence \(sequence) after \(last) under '\(subscriptions[index].subtree)': the server restarted")
                return .gap
            }
            return .skip
        }
        if subscriptions[index].subtreeBytes.isEmpty && sequence != last + 1 {
            gap(index, "global sequence jumped from \(last) to \(sequence)")
            return .gap
        }
        // Only a session's update carries `sprev`; most carry no properties at all.
        if !properties.isEmpty, let previous = properties.sessionPrevious, let session = Self.session(of: key),
           session.utf8HasPrefix(subscriptions[index].subtreeBytes) {
            let intact = subscriptions[index].sessions[session].map { previous == $0 }
                ?? (previous <= subscriptions[index].snapshotSequence)
            guard intact else {
                gap(index, "session chain of '\(session)' broken: sprev \(previous) at sequence \(sequence)")
                return .gap
            }
            subscriptions[index].sessions[session] = sequence
        }
        subscriptions[index].lastSequence = sequence
        statistics.updatesApplied += 1
        return .apply
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

/// Bytes lent to the map while its lock is held, read there and copied, never kept: they live in
/// the socket's message, on this thread, until the next receive.
private struct LentBytes: @unchecked Sendable {
    let bytes: UnsafeRawBufferPointer

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }
}
