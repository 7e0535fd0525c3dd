import MessagePath
import Logging
import ZeroMQ

extension CloneServerLoop {
    func drainSnapshotRequests() throws(ZMQError) {
        var handled = 0
        while handled < configuration.batchLimit,
              let message = try snapshot.receiveMessage(
                  dontWait: true, maxFrames: 3, maxBytes: 4096, readUserID: configuration.access != nil, readProperty: capabilityProperty) {
            handled += 1
            let identity = message.frames.first ?? []
            if message.truncated {
                let error: CloneDecodeError = message.totalBytes > 4096
                    ? .oversize(bytes: message.totalBytes, limit: 4096)
                    : .wrongFrameCount(command: "ICANHAZ?", expected: 2, got: 3)
                countBadInput(error, peer: identity, channel: "snapshot")
                continue
            }
            do {
                let request = try CloneMessage.decode(Array(message.frames.dropFirst()), on: .snapshotRequest)
                if case .icanhaz(let subtree) = request {
                    let bytes = Array(subtree.utf8)
                    let peer = PeerClass(userID: message.userID)
                    if configuration.access != nil, peer == .client, !snapshotLimiter.allow(message.userID ?? "client") {
                        statistics.snapshotsRateLimited += 1
                        logRefusal("clone snapshot dropped: this client asks faster than the host allows", userID: message.userID, peer: identity, [
                            "flowbus.peer": "\(identity.printable)", "flowbus.subtree": "\(subtree)",
                            "flowbus.limit": "\(Int(snapshotLimiter.limit.perSecond))/s, \(Int(snapshotLimiter.limit.burst)) at once",
                            "flowbus.remedy": "ask for a snapshot when (re)subscribing, not in a loop; an operator can raise flowbus up --snapshot-rate",
                        ])
                        continue
                    }
                    if let access = configuration.access, !access.mayRead(bytes, as: peer, capability: message.property) {
                        try refuseSnapshot(to: identity, subtree: subtree, userID: message.userID)
                    } else {
                        try serveSnapshot(to: identity, subtree: bytes)
                    }
                }
            } catch let error as CloneDecodeError {
                countBadInput(error, peer: identity, channel: "snapshot")
            } catch let error as ZMQError {
                throw error
            } catch {}
        }
    }

    /// A KVSYNC per key under the subtree, then KTHXBAI with the current global sequence:
    /// updates after it reach the client through its subscription, which is already in place.
    private func serveSnapshot(to identity: Frame, subtree: [UInt8]) throws(ZMQError) {
        let empty: Frame = []
        let keys = index.keys(under: subtree) ?? Array(store.keys)
        statistics.snapshotKeysRead += keys.count
        for key in keys {
            guard let stored = store[key] else { continue }
            guard try sendSnapshot(identity, key.bytes, stored.sequence.bigEndianFrame, empty, empty, value(of: stored, key: key.bytes)) else {
                statistics.snapshotsAborted += 1
                logger.warning("clone snapshot cut short: the client's queue is full or it has gone", metadata: [
                    "flowbus.service": "clone", "flowbus.peer": "\(identity.printable)",
                ])
                return
            }
            statistics.snapshotEntriesSent += 1
        }
        let end = CloneMessage.kthxbai(sequence: sequence, subtree: String(decoding: subtree, as: UTF8.self)).frames
        if try sendSnapshot(identity, end[0], end[1], end[2], end[3], end[4]) {
            statistics.snapshotsServed += 1
        } else {
            statistics.snapshotsAborted += 1
        }
    }

    /// A snapshot the peer may not read: no KVSYNC, and a KTHXBAI at sequence 0 whose
    /// properties say why (`refused=…`), so the client can tell a person instead of showing an
    /// empty subtree.
    private func refuseSnapshot(to identity: Frame, subtree: String, userID: String?) throws(ZMQError) {
        statistics.snapshotsRefused += 1
        let reason = "a client may read the public subtrees and /s/<id>/ of a session whose capability it presents, not \(subtree.isEmpty ? "every key" : subtree); open the session (coord.app openSession) or ask its driver for a watch capability"
        logRefusal("clone snapshot refused", userID: userID, peer: identity, [
            "flowbus.peer": "\(identity.printable)", "flowbus.subtree": "\(subtree)", "flowbus.reason": "\(reason)",
        ])
        var properties = CloneProperties()
        properties.set(CloneProperties.refusedName, reason)
        _ = try sendSnapshot(identity, CloneMessage.kthxbaiCommand, UInt64(0).bigEndianFrame, [], properties.encoded, Array(subtree.utf8))
    }

    /// False when the client's queue is full or the client has gone (ROUTER_MANDATORY).
    private func sendSnapshot(_ identity: Frame, _ f0: Frame, _ f1: Frame, _ f2: Frame, _ f3: Frame, _ f4: Frame) throws(ZMQError) -> Bool {
        do {
            guard try snapshot.send(identity, more: true, dontWait: true) else { return false }
        } catch {
            if error.code == .hostUnreachable { return false }
            throw error
        }
        try snapshot.send(f0, more: true)
        try snapshot.send(f1, more: true)
        try snapshot.send(f2, more: true)
        try snapshot.send(f3, more: true)
        try snapshot.send(f4)
        return true
    }
}
