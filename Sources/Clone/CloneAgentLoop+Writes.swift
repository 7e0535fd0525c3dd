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

    func takeOutbox() {
        var taken: [[Frame]] = []
        let held = heldWrites.count - heldStart
        shared.outbox.withLock { outbox in
            swap(&taken, &outbox.frames)
            outbox.held = held + taken.count
        }
        guard !taken.isEmpty else { return }
        statistics.outboxTakes += 1
        statistics.writesQueued += taken.count
        // Numbered as `CloneAgent.enqueue` numbered them: in the order they were queued.
        for frames in taken {
            writesTaken += 1
            heldWrites.append(HeldWrite(frames: frames, sequence: writesTaken))
        }
    }

    func sendHeldWrites() throws(ZMQError) {
        guard collectorSubscriptions > 0, heldStart < heldWrites.count else { return }
        let before = heldStart
        var blocked = false
        let now = MonotonicTime.now()
        var skipped = 0
        while heldStart < heldWrites.count {
            let write = heldWrites[heldStart]
            if write.isResend && !confirmations.isWaiting(write.frames[2]) {
                // Confirmed while it waited to go again.
                heldStart += 1
                skipped += 1
                continue
            }
            guard try writer.send(write.frames, dontWait: true) else {
                blocked = true
                break
            }
            if ackTopic == nil {
                writesSettled = write.sequence
            } else if write.isResend {
                confirmations.sentAgain(write.frames, now: now)
            } else {
                confirmations.sentFirst(write.frames, sequence: write.sequence, now: now)
            }
            heldStart += 1
        }
        if ackTopic != nil { writesSettled = confirmations.settledThrough }
        if blocked && !writeBlocked { statistics.writesBlocked += 1 }
        writeBlocked = blocked
        statistics.writesSent += heldStart - before - skipped
        heldWrites.dropConsumed(&heldStart)
        let held = heldWrites.count - heldStart
        shared.outbox.withLock { $0.held = held }
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
            if confirmations.confirm(Array(uuids[offset..<(offset + 16)])) { statistics.writesConfirmed += 1 }
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
            case .resend(let frames):
                statistics.writesResent += 1
                heldWrites.append(HeldWrite(frames: frames, sequence: 0, isResend: true))
            case .abandon(let frames):
                statistics.writesAbandoned += 1
                logger.error("a write was never confirmed by the clone server and is given up", metadata: [
                    "flowbus.service": "clone-agent", "flowbus.key": "\(frames[0].printable)",
                    "flowbus.tries": "\(configuration.confirmTries)",
                    "flowbus.hint": "check the host (`flowbus ps`: clone write counters, fault rules) and its log",
                ])
            }
        }
        statistics.writesUnconfirmed = confirmations.count
        writesSettled = confirmations.settledThrough
    }
}

/// A write waiting for the collector: numbered when it is first sent, or sent again.
struct HeldWrite {
    var frames: [Frame]
    var sequence: UInt64
    var isResend = false
}
