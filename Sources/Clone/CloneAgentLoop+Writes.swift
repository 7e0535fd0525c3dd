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
        statistics.writesQueued += taken.count
        heldWrites.append(contentsOf: taken)
    }

    func sendHeldWrites() throws(ZMQError) {
        guard collectorSubscriptions > 0, heldStart < heldWrites.count else { return }
        let before = heldStart
        var blocked = false
        while heldStart < heldWrites.count {
            guard try writer.send(heldWrites[heldStart], dontWait: true) else {
                blocked = true
                break
            }
            heldStart += 1
        }
        if blocked && !writeBlocked { statistics.writesBlocked += 1 }
        writeBlocked = blocked
        statistics.writesSent += heldStart - before
        if heldStart == heldWrites.count {
            heldWrites.removeAll(keepingCapacity: true)
            heldStart = 0
        } else if heldStart > 4096 {
            heldWrites.removeFirst(heldStart)
            heldStart = 0
        }
        let held = heldWrites.count - heldStart
        shared.outbox.withLock { $0.held = held }
    }
}
