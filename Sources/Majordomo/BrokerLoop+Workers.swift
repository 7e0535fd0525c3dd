import Logging
import MessagePath
import ZeroMQ

extension BrokerLoop {
    func workerCommand(_ command: MDP.WorkerCommand, _ frames: [Frame], layout: MDPLayout, from peer: String? = nil) {
        let identity = frames[0]
        let worker = workers[FrameKey(identity)]
        // A fault rule may hold a worker's heartbeats, or everything it sends (one side of a
        // partition), back, as if lost on the way.
        if faults.isArmed {
            let service = worker?.service.name ?? (command == .ready ? frames[layout.subject] : [])
            if case .drop = faults.verdict(scope: .worker, subject: service, peer: peer) {
                tally.faults.heartbeatsHeld += 1
                return
            }
            if command == .heartbeat, worker != nil, case .drop = faults.verdict(scope: .heartbeat, subject: service, peer: peer) {
                tally.faults.heartbeatsHeld += 1
                return
            }
        }
        // Any command from a registered worker is a heartbeat.
        worker?.lastHeard = now
        switch command {
        case .ready:
            let service = frames[layout.subject]
            if worker != nil {
                refuse(identity, "a second READY (a worker registers once per connection)")
            } else if service.starts(with: MDP.mmiPrefix) {
                refuse(identity, "READY for \(service.printable): mmi.* services belong to the broker")
            } else {
                register(identity, service: service, credit: layout.credit)
            }
        case .reply:
            guard let worker else {
                refuse(identity, "REPLY from a peer that never sent READY (or was removed)")
                return
            }
            let client = frames[layout.subject]
            guard worker.finished(requestOf: client) else {
                refuse(identity, "REPLY for a client whose request this worker does not hold")
                return
            }
            worker.served += 1
            if worker.service.observed {
                observe(.reply, service: worker.service.name, client: client, worker: identity, frames: frames, bodyStart: layout.bodyStart)
            }
            if sendClientReply(to: client, service: worker.service.name, body: frames, from: layout.bodyStart) {
                tally.replies += 1
            }
            workerHasRoom(worker)
        case .heartbeat:
            guard let worker else {
                refuse(identity, "HEARTBEAT from a peer that never sent READY (or was removed)")
                return
            }
            // It says it holds fewer requests than it was handed, and the last was handed over two
            // heartbeats ago: the others were lost on the way and would hold its credit for ever.
            if let held = layout.held, held < worker.inFlight.count,
               now.since(worker.lastDispatch) >= configuration.heartbeatInterval * 2 {
                let lost = worker.release(downTo: held)
                tally.requestsLostOnTheWay += lost
                logger.info("a worker never received requests it was handed; its credit is free again (their clients retry)", metadata: [
                    "flowbus.peer": "\(identity.printable)", "flowbus.service": "\(worker.service.displayName)", "flowbus.lost": "\(lost)",
                ])
                workerHasRoom(worker)
            }
        case .disconnect:
            if let worker {
                tally.workersDisconnected += 1
                removeWorker(worker)
                logger.debug("worker disconnected", metadata: ["flowbus.peer": "\(identity.printable)", "flowbus.service": "\(worker.service.displayName)"])
            }
        case .request:
            refuse(identity, "REQUEST sent to the broker; only the broker sends REQUEST to workers")
        }
    }

    func register(_ identity: Frame, service name: Frame, credit: Int) {
        guard let service = serviceEntry(for: name) else {
            refuse(identity, "READY for a new service while the broker already tracks \(configuration.maxServices)")
            return
        }
        let worker = WorkerEntry(identity: identity, service: service, credit: credit, now: now)
        workers[FrameKey(identity)] = worker
        service.workerCount += 1
        service.everHadWorker = true
        tally.workersRegistered += 1
        logger.debug("worker ready", metadata: [
            "flowbus.peer": "\(identity.printable)", "flowbus.service": "\(service.displayName)", "flowbus.credit": "\(credit)",
        ])
        workerHasRoom(worker)
    }

    /// A worker with room takes the oldest waiting requests while it has room, then, if it still
    /// has some, joins the back of the ready line (unless it is already in it).
    func workerHasRoom(_ worker: WorkerEntry) {
        let service = worker.service
        while worker.hasRoom, let waiting = service.waiting.popFirst() {
            if waiting.expiresAt <= now {
                expire(waiting, service: service)
                continue
            }
            if sendRequest(to: worker, client: waiting.client, body: waiting.message, from: waiting.bodyStart) {
                worker.took(requestOf: waiting.client, at: now)
                tally.dispatched += 1
                continue
            }
            // The worker is gone: the request goes back to the front of the line for the next one.
            var requeued = FIFOQueue<WaitingRequest>()
            requeued.append(waiting)
            for other in service.waiting.elements { requeued.append(other) }
            service.waiting = requeued
            removeWorker(worker)
            return
        }
        if worker.hasRoom && !worker.queued {
            worker.queued = true
            service.ready.append(worker)
        }
    }

    /// Answers a valid but unexpected command with DISCONNECT, as 7/MDP says, and forgets the peer.
    func refuse(_ identity: Frame, _ detail: @autoclosure () -> String) {
        if workers[FrameKey(identity)] == nil, expiredIdentities.remove(identity) {
            // A worker taken for dead speaks again (a HEARTBEAT or a late REPLY): the usual end of
            // an expiry, not bad input. Its DISCONNECT makes it register again.
            tally.expiredWorkersHeard += 1
            logger.debug("a worker heard from after it was expired: told to reconnect", metadata: ["flowbus.peer": "\(identity.printable)"])
            sendWorkerCommand(MDP.disconnectFrame, to: identity)
            return
        }
        countBadInput(.unexpectedCommand, peer: identity, detail())
        if let worker = workers[FrameKey(identity)] {
            tally.workersDisconnected += 1
            removeWorker(worker)
        }
        sendWorkerCommand(MDP.disconnectFrame, to: identity)
    }

    /// Forgets a worker. A request it held (or several, with credit) is not resent: clients retry (Lazy Pirate), workers are idempotent.
    func removeWorker(_ worker: WorkerEntry) {
        guard workers[FrameKey(worker.identity)] === worker else { return }
        workers[FrameKey(worker.identity)] = nil
        worker.service.workerCount -= 1
        if worker.queued {
            worker.queued = false
            worker.service.ready.removeAll { $0 === worker }
        }
    }

    func expire(_ waiting: WaitingRequest, service: ServiceEntry) {
        if !service.everHadWorker { tally.badInput.unknownService += 1 }
        let why = service.workerCount == 0
            ? "no worker for service \(service.displayName) registered within \(configuration.requestExpiry); is its plugin running? try `flowbus ps`"
            : "every worker of service \(service.displayName) stayed busy for \(configuration.requestExpiry); start more workers"
        reject(.expired, client: waiting.client, service: service.name, detail: why)
    }
}
