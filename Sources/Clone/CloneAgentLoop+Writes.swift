import Foundation
import Logging
import MessagePath
import Synchronization
import ZeroMQ

extension CloneAgentLoop {
    /// The collector's subscription reaches our XPUB once it is connected; until then PUB semantics
    /// would drop writes silently, so they wait in `heldBatches`.
    /// A Flowbus server's collector also subscribes to `KVSetBatch.command`: it takes batches.
    func drainCollectorSubscriptions() throws(ZMQError) {
        while let message = try writer.receiveFrame(dontWait: true) {
            let frame = message.frame
            let batches = frame.count == 1 + KVSetBatch.command.count && frame.dropFirst().elementsEqual(KVSetBatch.command)
            switch frame.first {
            case 1:
                if batches { batchSubscriptions += 1 } else { collectorSubscriptions += 1 }
            case 0:
                if batches { batchSubscriptions = max(0, batchSubscriptions - 1) } else { collectorSubscriptions = max(0, collectorSubscriptions - 1) }
            default: break
            }
        }
    }

    /// Takes what writers queued in the outbox and sends it, or holds what cannot go yet. False
    /// when the outbox was empty.
    @discardableResult
    func takeOutbox() throws(ZMQError) -> Bool {
        // The outbox and this thread trade arrays, so neither allocates one after the first takes
        // (the spare is moved, not copied: the outbox's writers append to it without a copy).
        var taken = spareBatches.popLast() ?? []
        let held = heldCount
        shared.outbox.withLock { outbox in
            swap(&taken, &outbox.writes)
            outbox.held = held + taken.count
        }
        guard !taken.isEmpty else {
            spareBatches.append(taken)
            return false
        }
        statistics.outboxTakes += 1
        statistics.writesQueued += taken.count
        lastTaken = .now()
        var sent = 0
        var failure: ZMQError?
        // Nothing waits before them and the collector takes writes: they go from the outbox's
        // array as they are, without a copy into `heldBatches` and out again.
        if held == 0, collectorSubscriptions > 0, !writeBlocked {
            let outcome = sendInOrder(taken, from: 0, now: .now())
            sent = outcome.next
            failure = outcome.failure
            if ackTopic != nil { writesSettled = confirmations.settledThrough }
            if outcome.blocked {
                statistics.writesBlocked += 1
                writeBlocked = true
            }
            statistics.writesSent += sent
        }
        let left = taken.count - sent
        if left == 0 {
            recycle(&taken)
        } else {
            // What was not sent (the socket blocked or failed) waits, behind nothing that was, in
            // the order it was queued.
            hold(taken, from: sent)
        }
        shared.outbox.withLock { $0.held = held + left }
        if let failure { throw failure }
        return true
    }

    /// Runs on a thread that queued writes, with `shared.shortcut.gate` held while this loop's
    /// thread sleeps in its poll: takes the outbox and sends it as the loop's pass would, when
    /// nothing waits before it (no writes held, a collector connected, its queue not full).
    /// Returns true when the loop's thread need not wake for it: everything went, and the writer
    /// socket has no message the sleeping poll would now miss (sending took in the socket's
    /// commands), and no write's confirmation falls due before the poll means to wake.
    ///
    /// Writes that come within `burstNanoseconds` of the last ones sent are left to the loop's
    /// thread, which wakes to find them and those queued meanwhile in the outbox, and sends them
    /// together (one KVSETS batch to a Flowbus server): a burst from one thread goes in batches,
    /// as before, and a write alone (a view model's state) leaves at once.
    func sendForWriter() -> Bool {
        guard heldCount == 0, collectorSubscriptions > 0, !writeBlocked else { return false }
        guard lastTaken.nanoseconds(until: .now()) >= Self.burstNanoseconds else { return false }
        do {
            // Another writer's thread may have taken the outbox first: nothing was sent then.
            if try takeOutbox() { statistics.outboxTakesByWriters += 1 }
        } catch {
            logger.error("clone agent: a write sent from the writer's thread failed: \(error)", metadata: ["flowbus.service": "clone-agent"])
            return false
        }
        announceSettled()
        guard heldCount == 0, !writeBlocked else { return false }
        guard let hasMessage = try? writer.hasMessage(), !hasMessage else { return false }
        if ackTopic != nil, let due = confirmations.nextDue(), due < plannedWake { return false }
        return true
    }

    func sendHeldWrites() throws(ZMQError) {
        guard collectorSubscriptions > 0, heldCount > 0 else { return }
        let before = heldCount
        var blocked = false
        let now = MonotonicTime.now()
        var skipped = 0
        var failure: ZMQError?
        while heldBatchStart < heldBatches.count {
            // The batch is read where the array holds it: the sends cannot change `heldBatches`.
            let outcome = sendInOrder(heldBatches[heldBatchStart], from: heldStart, now: now)
            skipped += outcome.skipped
            heldCount -= outcome.next - heldStart
            heldStart = outcome.next
            if outcome.blocked || outcome.failure != nil {
                blocked = outcome.blocked
                failure = outcome.failure
                break
            }
            // Drained: its array goes back to the outbox's trade.
            var drained: [PreparedWrite] = []
            swap(&drained, &heldBatches[heldBatchStart])
            recycle(&drained)
            heldBatchStart += 1
            heldStart = 0
        }
        heldBatches.dropConsumed(&heldBatchStart)
        if heldStart > 4096, heldBatchStart < heldBatches.count {
            // A long batch going out in parts lets go of what it sent, as it goes.
            heldBatches[heldBatchStart].removeFirst(heldStart)
            heldStart = 0
        }
        if ackTopic != nil { writesSettled = confirmations.settledThrough }
        if blocked && !writeBlocked { statistics.writesBlocked += 1 }
        writeBlocked = blocked
        statistics.writesSent += before - heldCount - skipped
        let held = heldCount
        shared.outbox.withLock { $0.held = held }
        if let failure { throw failure }
    }

    /// Puts `batch`'s writes from `start` on behind those already waiting.
    private func hold(_ batch: [PreparedWrite], from start: Int) {
        guard start < batch.count else { return }
        if heldBatchStart == heldBatches.count {
            heldBatches.removeAll(keepingCapacity: true)
            heldBatchStart = 0
            heldStart = start
        } else {
            // Only a batch taken while nothing waited can have gone in part.
            assert(start == 0, "a batch sent in part while others waited")
        }
        heldBatches.append(batch)
        heldCount += batch.count - start
    }

    /// A write sent again waits behind all the others.
    private func holdAgain(_ write: PreparedWrite) {
        var write = write
        write.isResend = true
        if heldBatchStart < heldBatches.count {
            heldBatches[heldBatches.count - 1].append(write)
            heldCount += 1
        } else {
            hold([write], from: 0)
        }
    }

    /// Empties `batch`, keeping its room for the outbox (a few arrays are kept, the rest let go).
    private func recycle(_ batch: inout [PreparedWrite]) {
        batch.removeAll(keepingCapacity: true)
        if spareBatches.count < 4 { spareBatches.append(batch) }
        batch = []
    }

    /// Sends `writes` from `start` on, in order, until one cannot go now (`blocked`) or the socket
    /// fails (`failure`, the write at `next` not sent). A resend confirmed while it waited is
    /// skipped. Each write is read where the array holds it, through a pointer: passed by value,
    /// Swift copied it out of the array (retaining its key, lines and value) and destroyed the
    /// copy, for every write.
    private func sendInOrder(_ writes: [PreparedWrite], from start: Int, now: MonotonicTime)
        -> (next: Int, skipped: Int, blocked: Bool, failure: ZMQError?) {
        let batching = batchSubscriptions > 0 && configuration.batchWrites
        return writes.withUnsafeBufferPointer { buffer in
            var next = start
            var skipped = 0
            while next < buffer.count {
                let write = buffer.baseAddress! + next
                if write.pointee.isResend && !confirmations.isWaiting(write.pointee.uuid) {
                    // Confirmed while it waited to go again.
                    next += 1
                    skipped += 1
                    continue
                }
                if batching {
                    let end = batchEnd(buffer, from: next)
                    if end - next >= 2 {
                        do throws(ZMQError) {
                            guard try sendBatch(buffer, next..<end) else { return (next, skipped, true, nil) }
                        } catch {
                            return (next, skipped, false, error)
                        }
                        for index in next..<end { noteSent(buffer.baseAddress! + index, now: now) }
                        next = end
                        continue
                    }
                }
                do throws(ZMQError) {
                    guard try send(write) else { return (next, skipped, true, nil) }
                } catch {
                    return (next, skipped, false, error)
                }
                noteSent(write, now: now)
                next += 1
            }
            return (next, skipped, false, nil)
        }
    }

    /// A write the collector took: settled at once when no confirmation is asked for, else
    /// waiting for one (again, for a write sent once more). Whoever sends writes then sets
    /// `writesSettled` from the confirmations' mark once for the batch.
    private func noteSent(_ write: UnsafePointer<PreparedWrite>, now: MonotonicTime) {
        if ackTopic == nil {
            if !write.pointee.isResend { writesSettled = write.pointee.count }
        } else if write.pointee.isResend {
            confirmations.sentAgain(write.pointee, now: now)
        } else {
            confirmations.sentFirst(write.pointee, sequence: write.pointee.count, now: now)
        }
    }

    /// Writes a KVSET's five frames to the collector straight from what the write holds (its
    /// properties frame in a buffer this thread reuses); false when the socket cannot take it now.
    private func send(_ write: UnsafePointer<PreparedWrite>) throws(ZMQError) -> Bool {
        let propertiesLength = CloneAgent.KVSetLines.write(
            into: &propertiesScratch.bytes, leading: write.pointee.leading, own: ownLines, count: write.pointee.count)
        let first: Result<Bool, ZMQError> = Self.withUTF8(of: write.pointee.key) { bytes in
            do throws(ZMQError) {
                return .success(try writer.send(bytes: bytes, more: true, dontWait: true))
            } catch {
                return .failure(error)
            }
        }
        // Only the first part can meet the high-water mark; the others follow it.
        guard try first.get() else { return false }
        try writer.send(CloneAgent.KVSetLines.zeroSequence, more: true)
        try withUnsafeBytes(of: write.pointee.uuid.uuid) { bytes throws(ZMQError) in _ = try writer.send(bytes: bytes, more: true) }
        try writer.send(bytes: UnsafeRawBufferPointer(rebasing: propertiesScratch.bytes[..<propertiesLength]), more: true)
        try writer.send(write.pointee.value)
        return true
    }

    /// Where a batch starting at `start` ends: after at most `KVSetBatch.maxWrites` writes and
    /// `maxBytes` of entries, before a resend (which goes alone, as it may be skipped) and before a
    /// write too large to share a message. A batch of one is sent as a KVSET.
    private func batchEnd(_ writes: UnsafeBufferPointer<PreparedWrite>, from start: Int) -> Int {
        var end = start
        var bytes = 0
        let ownBytes = ownLines.writeSequencePrefix.count + 21 + ownLines.trailing.count
        while end < writes.count, end - start < KVSetBatch.maxWrites {
            let write = writes.baseAddress! + end
            guard !write.pointee.isResend, write.pointee.value.count <= KVSetBatch.maxValueBytes else { break }
            // At most: the count takes up to 20 digits and a newline.
            bytes += KVSetBatch.entrySize(
                keyBytes: write.pointee.key.utf8.count, propertiesBytes: write.pointee.leading.count + ownBytes, valueBytes: write.pointee.value.count)
            guard bytes <= KVSetBatch.maxBytes || end == start else { break }
            end += 1
        }
        return end
    }

    /// Sends `range`'s writes as one KVSETS message (`KVSetBatch`); false when the socket cannot
    /// take it now (none of them sent).
    private func sendBatch(_ writes: UnsafeBufferPointer<PreparedWrite>, _ range: Range<Int>) throws(ZMQError) -> Bool {
        var length = 0
        for index in range {
            let write = writes.baseAddress! + index
            let propertiesLength = CloneAgent.KVSetLines.write(
                into: &propertiesScratch.bytes, leading: write.pointee.leading, own: ownLines, count: write.pointee.count)
            let properties = UnsafeRawBufferPointer(rebasing: propertiesScratch.bytes[..<propertiesLength])
            length = Self.withUTF8(of: write.pointee.key) { key in
                write.pointee.value.withUnsafeBytes { value in
                    KVSetBatch.append(key: key, uuid: write.pointee.uuid, properties: properties, value: value, into: &batchScratch.bytes, at: length)
                }
            }
        }
        // Only the first part can meet the high-water mark; the other follows it.
        guard try writer.send(KVSetBatch.command, more: true, dontWait: true) else { return false }
        try writer.send(bytes: UnsafeRawBufferPointer(rebasing: batchScratch.bytes[..<length]), more: false)
        statistics.batchesSent += 1
        statistics.writesBatched += range.count
        return true
    }

    /// `key`'s UTF-8 where the string holds it (a native string does), else from a copy.
    private static func withUTF8<R>(of key: String, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        if let result = key.utf8.withContiguousStorageIfAvailable({ body(UnsafeRawBufferPointer($0)) }) { return result }
        var key = key
        return key.withUTF8 { body(UnsafeRawBufferPointer($0)) }
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
                holdAgain(write)
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

