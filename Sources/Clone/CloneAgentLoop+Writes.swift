import Foundation
import Logging
import MessagePath
import Synchronization
import ZeroMQ

extension CloneAgentLoop {
    /// The collector's subscription reaches our XPUB once it is connected; until then PUB semantics
    /// would drop writes silently, so they wait in `heldWrites`.
    func drainCollectorSubscriptions() throws(ZMQError) {
        while let message = try writer.receiveFrame(dontWait: true) {
            switch message.frame.first {
            case 1: collectorSubscriptions += 1
            case 0: collectorSubscriptions = max(0, collectorSubscriptions - 1)
            default: break
            }
        }
    }

    func takeOutbox() throws(ZMQError) {
        // The outbox and this thread trade arrays, so neither allocates one after the first takes
        // (the spare is moved, not copied: the outbox's writers append to it without a copy).
        var taken: [PreparedWrite] = []
        swap(&taken, &spareOutbox)
        let held = heldWrites.count - heldStart
        shared.outbox.withLock { outbox in
            swap(&taken, &outbox.writes)
            outbox.held = held + taken.count
        }
        defer {
            taken.removeAll(keepingCapacity: true)
            spareOutbox = taken
        }
        guard !taken.isEmpty else { return }
        statistics.outboxTakes += 1
        statistics.writesQueued += taken.count
        var sent = 0
        defer {
            // Numbered as `CloneAgent.enqueue` numbered them: in the order they were queued. What
            // was not sent here waits in `heldWrites`, behind nothing that was.
            for index in sent..<taken.count {
                writesTaken += 1
                heldWrites.append(HeldWrite(write: taken[index], sequence: writesTaken))
            }
        }
        // Nothing waits before them and the collector takes writes: they go from the outbox's
        // array as they are, without a copy into `heldWrites` and out again.
        guard held == 0, collectorSubscriptions > 0, !writeBlocked else { return }
        let now = MonotonicTime.now()
        var blocked = false
        while sent < taken.count {
            guard try send(taken[sent]) else {
                blocked = true
                break
            }
            writesTaken += 1
            noteSent(taken[sent], sequence: writesTaken, again: false, now: now)
            sent += 1
        }
        if ackTopic != nil { writesSettled = confirmations.settledThrough }
        if blocked {
            statistics.writesBlocked += 1
            writeBlocked = true
        }
        statistics.writesSent += sent
        let left = taken.count - sent
        shared.outbox.withLock { $0.held = left }
    }

    func sendHeldWrites() throws(ZMQError) {
        guard collectorSubscriptions > 0, heldStart < heldWrites.count else { return }
        let before = heldStart
        var blocked = false
        let now = MonotonicTime.now()
        var skipped = 0
        do {
            // Read where the array holds them, not copied out: the array is this function's
            // meanwhile, so nothing the sends call can change it under them.
            var writes: [HeldWrite] = []
            swap(&writes, &heldWrites)
            defer { swap(&writes, &heldWrites) }
            while heldStart < writes.count {
                if writes[heldStart].isResend && !confirmations.isWaiting(writes[heldStart].write.uuid) {
                    // Confirmed while it waited to go again.
                    heldStart += 1
                    skipped += 1
                    continue
                }
                guard try send(writes[heldStart].write) else {
                    blocked = true
                    break
                }
                noteSent(writes[heldStart].write, sequence: writes[heldStart].sequence, again: writes[heldStart].isResend, now: now)
                heldStart += 1
            }
        }
        if ackTopic != nil { writesSettled = confirmations.settledThrough }
        if blocked && !writeBlocked { statistics.writesBlocked += 1 }
        writeBlocked = blocked
        statistics.writesSent += heldStart - before - skipped
        heldWrites.dropConsumed(&heldStart)
        let held = heldWrites.count - heldStart
        shared.outbox.withLock { $0.held = held }
    }

    /// A write the collector took: settled at once when no confirmation is asked for, else
    /// waiting for one (again, for a write sent once more). Whoever sends writes then sets
    /// `writesSettled` from the confirmations' mark once for the batch.
    private func noteSent(_ write: PreparedWrite, sequence: UInt64, again: Bool, now: MonotonicTime) {
        if ackTopic == nil {
            writesSettled = sequence
        } else if again {
            confirmations.sentAgain(write, now: now)
        } else {
            confirmations.sentFirst(write, sequence: sequence, now: now)
        }
    }

    /// Writes a KVSET's five frames to the collector straight from what the write holds (its
    /// properties frame in a buffer this thread reuses); false when the socket cannot take it now.
    private func send(_ write: PreparedWrite) throws(ZMQError) -> Bool {
        let propertiesLength = CloneAgent.KVSetLines.write(
            into: &propertiesScratch.bytes, leading: write.leading, own: ownLines, count: write.count)
        var key = write.key
        let first: Result<Bool, ZMQError> = key.withUTF8 { bytes in
            do throws(ZMQError) {
                return .success(try writer.send(bytes: UnsafeRawBufferPointer(bytes), more: true, dontWait: true))
            } catch {
                return .failure(error)
            }
        }
        // Only the first part can meet the high-water mark; the others follow it.
        guard try first.get() else { return false }
        try writer.send(CloneAgent.KVSetLines.zeroSequence, more: true)
        try withUnsafeBytes(of: write.uuid.uuid) { bytes throws(ZMQError) in _ = try writer.send(bytes: bytes, more: true) }
        try writer.send(bytes: UnsafeRawBufferPointer(rebasing: propertiesScratch.bytes[..<propertiesLength]), more: true)
        try writer.send(write.value)
        return true
    }

    static let ackPrefix = Array(CloneProperties.ackTopicPrefix.utf8)

    /// A confirmation from the server: `ACK/<agent>`, its value the UUIDs (16 bytes each) of
    /// the writes it applied (or had applied before). One for another agent (seen by an agent
    /// subscribed to everything) is ignored.
    func confirmed(_ frames: [Frame]) {
        guard let ackTopic, frames.count == 5, frames[0] == ackTopic else { return }
        let uuids = frames[4]
        var offset = 0
        while offset + 16 <= uuids.count {
            if let uuid = UUID(frame: uuids[offset..<(offset + 16)]), confirmations.confirm(uuid) { statistics.writesConfirmed += 1 }
            offset += 16
        }
        statistics.writesUnconfirmed = confirmations.count
        writesSettled = confirmations.settledThrough
    }

    /// Sends again the writes not confirmed in time (the newest of each key); gives up on one
    /// after its last try, with an error in the log.
    func resendUnconfirmed(now: MonotonicTime) {
        for verdict in confirmations.due(now: now) {
            switch verdict {
            case .resend(let write):
                statistics.writesResent += 1
                heldWrites.append(HeldWrite(write: write, sequence: 0, isResend: true))
            case .abandon(let write):
                statistics.writesAbandoned += 1
                logger.error("a write was never confirmed by the clone server and is given up", metadata: [
                    "flowbus.service": "clone-agent", "flowbus.key": "\(write.key)",
                    "flowbus.tries": "\(configuration.confirmTries)",
                    "flowbus.hint": "check the host (`flowbus ps`: clone write counters, fault rules) and its log",
                ])
            }
        }
        statistics.writesUnconfirmed = confirmations.count
        writesSettled = confirmations.settledThrough
    }
}

/// Bytes a thread reuses to make a frame before sending it; freed with it.
final class FrameScratch {
    var bytes: UnsafeMutableRawBufferPointer

    init(capacity: Int) {
        bytes = .allocate(byteCount: capacity, alignment: 1)
    }

    deinit { bytes.deallocate() }
}

/// A write waiting for the collector: numbered when it is first sent, or sent again.
struct HeldWrite {
    var write: PreparedWrite
    var sequence: UInt64
    var isResend = false
}
