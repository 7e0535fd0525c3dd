import MessagePath
import ZeroMQ

extension BrokerLoop {
    func clientRequest(_ frames: [Frame], layout: MDPLayout, from peer: String? = nil) {
        let service = frames[layout.subject]
        if service.starts(with: MDP.mmiPrefix) {
            answerMMI(frames, layout: layout)
            return
        }
        tally.requests += 1
        // The fault seam: one relaxed load while no rule is set.
        guard faults.isArmed else {
            route(frames, bodyStart: layout.bodyStart, service: service)
            return
        }
        let verdict = faults.verdict(scope: .service, subject: service, peer: peer) { frames[layout.bodyStart] }
        if case .deliver = verdict {
            route(frames, bodyStart: layout.bodyStart, service: service)
            if !held.isEmpty {
                // The ones it overtook enough go right behind it.
                held.passed()
                releaseHeld()
            }
            return
        }
        if case .drop = verdict { tally.faultDropped += 1 } else { tally.faults.count(verdict) }
        if let observer = configuration.observer, observer.observes(service) {
            observe(.faulted(verdict), service: service, client: frames[0], frames: frames, bodyStart: layout.bodyStart)
        }
        let request = HeldRequest(frames: frames, bodyStart: layout.bodyStart, service: service)
        switch verdict {
        case .deliver, .drop:
            break
        case .delay(_, let duration):
            held.hold(request, until: now + duration)
        case .reorder(_, let behind):
            held.hold(request, behind: behind, now: now)
        case .duplicate(_, let copies):
            for _ in 0...copies { route(frames, bodyStart: layout.bodyStart, service: service) }
        case .truncate(_, let bytes):
            var damaged = frames
            FaultVerdict.truncate(&damaged[layout.bodyStart], bytes: bytes)
            route(damaged, bodyStart: layout.bodyStart, service: service)
        case .corrupt(_, let bytes, let seed):
            var damaged = frames
            FaultVerdict.corrupt(&damaged[layout.bodyStart], bytes: bytes, seed: seed)
            route(damaged, bodyStart: layout.bodyStart, service: service)
        case .stale:
            // A Clone fault (rules refuse it on services): the request goes on.
            route(frames, bodyStart: layout.bodyStart, service: service)
        }
    }

    /// Routes the held requests whose time came (or that enough others overtook).
    func releaseHeld() {
        for request in held.takeDue(now: now) {
            route(request.frames, bodyStart: request.bodyStart, service: request.service)
        }
    }

    /// A client request that ends at its service name is malformed 7/MDP, yet says whom to answer:
    /// it gets a `malformed` rejection, as a request with several body frames gets a MALFORMED
    /// reply from its worker. 8/MMI requests are the broker's own and plain text: only counted.
    func requestWithoutBody(_ frames: [Frame], _ error: MDPDecodeError) {
        countBadInput(error.kind, peer: frames[0], error.description)
        let service = frames[3]
        guard !service.starts(with: MDP.mmiPrefix) else { return }
        reject(.malformed, client: frames[0], service: service,
               detail: "the request to \(service.printable) had 0 body frames; a Flowbus request is exactly one Envelope frame")
    }

    /// Hands the request to the worker of its service that has waited longest with room, or queues it.
    func route(_ frames: [Frame], bodyStart: Int, service name: Frame) {
        guard let service = serviceEntry(for: name) else {
            reject(.queueFull, client: frames[0], service: name,
                   detail: "the broker already tracks \(configuration.maxServices) services; no room for \(name.printable)")
            return
        }
        if service.observed { observe(.request, service: name, client: frames[0], frames: frames, bodyStart: bodyStart) }
        if service.waiting.isEmpty, dispatchToReadyWorker(frames, bodyStart: bodyStart, service: service) {
            return
        }
        guard service.waiting.count < configuration.maxQueuedRequestsPerService else {
            reject(.queueFull, client: frames[0], service: name,
                   detail: "\(configuration.maxQueuedRequestsPerService) requests already wait for service \(service.displayName); start more workers or slow down")
            return
        }
        service.waiting.append(WaitingRequest(message: frames, bodyStart: bodyStart, expiresAt: now.adding(nanoseconds: requestExpiryNanoseconds)))
    }

    /// Sends the request to the first worker in the ready line; one with room left goes to the back
    /// of the line. Workers found gone on the way are removed. False if none took it.
    func dispatchToReadyWorker(_ frames: [Frame], bodyStart: Int, service: ServiceEntry) -> Bool {
        while let worker = service.ready.popFirst() {
            worker.queued = false
            if sendRequest(to: worker, client: frames[0], body: frames, from: bodyStart) {
                worker.took(requestOf: frames[0], at: now)
                tally.dispatched += 1
                if worker.hasRoom {
                    worker.queued = true
                    service.ready.append(worker)
                }
                return true
            }
            removeWorker(worker)
        }
        return false
    }

    func serviceEntry(for name: Frame) -> ServiceEntry? {
        if let service = services[FrameKey(name)] { return service }
        guard services.count < configuration.maxServices else { return nil }
        let service = ServiceEntry(name: name, observed: configuration.observer?.observes(name) ?? false)
        services[FrameKey(name)] = service
        return service
    }

    /// Counts the rejection and, when the host supplies a body for it, answers the client with an MDP REPLY.
    func reject(_ reason: BrokerRejection.Reason, client: Frame, service: Frame, detail: @autoclosure () -> String) {
        tally.rejections.count(reason)
        guard let makeBody = configuration.rejectionReply else { return }
        let rejection = BrokerRejection(reason: reason, service: service, client: client.printable, detail: detail())
        guard let body = makeBody(rejection) else { return }
        if let observer = configuration.observer, observer.observes(service) {
            observe(.rejected(reason: reason.rawValue), service: service, client: client, frames: body, bodyStart: 0)
        }
        sendClientReply(to: client, service: service, body: body, from: 0)
    }

    /// 8/MMI: `mmi.service` answers "200" when the named service has a worker, "404" when not;
    /// any other `mmi.*` answers "501".
    func answerMMI(_ frames: [Frame], layout: MDPLayout) {
        tally.mmiRequests += 1
        let service = frames[layout.subject]
        let code: Frame
        if service == MDP.mmiService {
            let asked = frames[layout.bodyStart]
            code = (services[FrameKey(asked)]?.workerCount ?? 0) > 0 ? MMI.found : MMI.notFound
        } else {
            tally.badInput.unknownService += 1
            code = MMI.notImplemented
        }
        sendClientReply(to: frames[0], service: service, body: [code], from: 0)
    }

    func oversize(_ frames: [Frame], layout: MDPLayout, totalBytes: Int) {
        countBadInput(.oversize, peer: frames[0], "message of \(totalBytes) bytes or \(frames.count)+ frames; limit \(configuration.maxMessageBytes) bytes, \(configuration.maxFramesPerMessage) frames")
        switch layout.kind {
        case .client:
            let service = frames[layout.subject]
            reject(.oversize, client: frames[0], service: service,
                   detail: "request of \(totalBytes) bytes to \(service.printable) is over the broker's limit of \(configuration.maxMessageBytes) bytes; send less per request")
        case .worker(.reply):
            // The worker did answer: it is idle again, and its client learns why no reply comes.
            let client = frames[layout.subject]
            guard let worker = workers[FrameKey(frames[0])], worker.finished(requestOf: client) else { return }
            worker.lastHeard = now
            reject(.oversizeReply, client: client, service: worker.service.name,
                   detail: "the reply of service \(worker.service.displayName) was \(totalBytes) bytes, over the broker's limit of \(configuration.maxMessageBytes) bytes")
            workerHasRoom(worker)
        case .worker:
            break
        }
    }
}

/// A client request a fault holds back.
struct HeldRequest {
    var frames: [Frame]
    var bodyStart: Int
    var service: Frame
}

/// The 8/MMI status codes.
enum MMI {
    static let found: Frame = Array("200".utf8)
    static let notFound: Frame = Array("404".utf8)
    static let notImplemented: Frame = Array("501".utf8)
}
