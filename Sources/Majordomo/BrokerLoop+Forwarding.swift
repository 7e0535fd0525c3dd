import MessagePath
import ZeroMQ

// The broker's common case without a copy: a client request a ready worker takes at once, and a
// worker's REPLY, go on as the parts libzmq received (`ZMQSocket.forward` hands a part's buffer to
// the outgoing pipe). Only what the broker keeps or looks up becomes an array — a client's and a
// worker's routing ids, a service name — through the socket's cache of recent short frames, so
// even those are seldom allocated; a request that must wait keeps copies of its body frames only.
// Everything else (8/MMI, a request to a service the broker does not know yet, READY, HEARTBEAT,
// bad input, a fault rule armed, an oversize message) is read as frames by `handle`.
extension BrokerLoop {
    /// Handles `parts` when it is a client request or a worker REPLY the common case covers; false,
    /// with nothing sent (at most, ready workers found gone forgotten), when it must be read as frames.
    func forwarded(_ parts: ReceivedParts) -> Bool {
        guard !parts.truncated, parts.count >= 5, !faults.isArmed,
              let layout = try? MDPLayout.parse(parts, from: 1),
              bodyBytes(parts, from: layout.bodyStart) <= configuration.maxMessageBytes else { return false }
        switch layout.kind {
        case .client: return forwardRequest(parts, layout: layout)
        case .worker(.reply): return forwardReply(parts, layout: layout)
        case .worker: return false
        }
    }

    /// A request to a known service: straight to a worker ready for it when none waits before it,
    /// else to the back of the service's queue (body frames copied, as `route` keeps them).
    private func forwardRequest(_ parts: ReceivedParts, layout: MDPLayout) -> Bool {
        let name = parts[layout.subject]
        guard !MDPLayout.bytes(name, startWith: MDP.mmiPrefix), let service = services[FrameKey(socket.frame(of: name))] else { return false }
        var stamp: Frame?
        if let access = configuration.access {
            guard access.mayCall(service.name, as: PeerClass(userID: parts.userID)) else { return false }
            stamp = peerStamp(parts.userID)
        }
        let client = socket.frame(of: parts[0])
        if service.waiting.isEmpty {
            while let worker = service.ready.popFirst() {
                worker.queued = false
                guard begin(to: worker.identity) else {
                    removeWorker(worker)
                    continue
                }
                // Counted and observed as `clientRequest` and `route` do, once a worker took it.
                tally.requests += 1
                sawTraffic = true
                if service.observed {
                    observe(.request, service: service.name, client: client, body: Frame(parts[layout.bodyStart]))
                }
                part(MDP.empty)
                part(MDP.workerHeader)
                part(MDP.requestFrame)
                _ = try? socket.forward(parts, part: 0, more: true)
                part(MDP.empty)
                forwardBody(parts, from: layout.bodyStart, then: stamp)
                worker.lastSent = now
                worker.took(requestOf: client, at: now)
                tally.dispatched += 1
                if worker.hasRoom {
                    worker.queued = true
                    service.ready.append(worker)
                }
                return true
            }
        }
        // A full queue is `route`'s to refuse.
        guard service.waiting.count < configuration.maxQueuedRequestsPerService else { return false }
        tally.requests += 1
        sawTraffic = true
        let message = parts.frames(layout.bodyStart..<parts.count, first: client, last: stamp)
        if service.observed { observe(.request, service: service.name, client: client, body: message[1]) }
        service.waiting.append(WaitingRequest(message: message, bodyStart: 1, expiresAt: now.adding(nanoseconds: requestExpiryNanoseconds)))
        return true
    }

    /// A registered worker's REPLY to a request it holds: to the client, as `workerCommand` sends it.
    private func forwardReply(_ parts: ReceivedParts, layout: MDPLayout) -> Bool {
        let identity = socket.frame(of: parts[0])
        guard let worker = workers[FrameKey(identity)] else { return false }
        if let access = configuration.access {
            guard access.mayServe(worker.service.name, as: PeerClass(userID: parts.userID)) else { return false }
        }
        let client = socket.frame(of: parts[layout.subject])
        guard worker.finished(requestOf: client) else { return false }
        let service = worker.service
        worker.lastHeard = now
        worker.served += 1
        sawTraffic = true
        if service.observed {
            observe(.reply, service: service.name, client: client, worker: identity, body: Frame(parts[layout.bodyStart]))
        }
        if begin(to: client) {
            part(MDP.empty)
            part(MDP.clientHeader)
            part(service.name)
            forwardBody(parts, from: layout.bodyStart, then: nil)
            tally.replies += 1
        }
        workerHasRoom(worker)
        return true
    }

    /// Ends the message with `parts[start...]`, then `stamp` when there is one.
    private func forwardBody(_ parts: ReceivedParts, from start: Int, then stamp: Frame?) {
        let last = parts.count - 1
        var index = start
        while index < last {
            _ = try? socket.forward(parts, part: index, more: true)
            index += 1
        }
        guard let stamp else {
            _ = try? socket.forward(parts, part: last)
            return
        }
        _ = try? socket.forward(parts, part: last, more: true)
        _ = try? socket.send(stamp)
    }

    /// The frame a closed broker appends to a request (`MDP.peerPrefix`), made once for the same
    /// requester in a row.
    func peerStamp(_ userID: String?) -> Frame {
        let name = userID ?? PeerClass.client.rawValue
        if let last = lastPeerStamp, last.userID == name { return last.frame }
        let frame = MDP.peerPrefix + Array(name.utf8)
        lastPeerStamp = (name, frame)
        return frame
    }
}
