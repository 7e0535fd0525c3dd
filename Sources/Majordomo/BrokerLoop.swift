import Synchronization
import Logging
import MessagePath
import ZeroMQ
#if canImport(Glibc)
import Glibc
#endif

/// The broker's poll loop and everything it owns. Created and run on the broker thread only.
final class BrokerLoop {
    let socket: ZMQSocket
    let configuration: BrokerConfiguration
    let faults: FaultRules
    let logger: Logger
    let shared: BrokerShared
    let badInputLog: PeerLogLimiter

    var services: [FrameKey: ServiceEntry] = [:]
    var workers: [FrameKey: WorkerEntry] = [:]
    /// The identities of the last workers expired, so their next word is known for what it is.
    var expiredIdentities = RecentKeys<Frame>(capacity: 1024)
    /// Workers a heartbeat found unroutable, expired after the next read of the socket (`run`).
    var unroutableWorkers: [WorkerEntry] = []
    /// Counted in plain integers here, published to `shared` every tick.
    var tally = BrokerStatistics()
    var now = MonotonicTime.now()
    var nextTick: MonotonicTime

    /// Whether the last drain handled a client request or a worker REPLY: then the next poll spins first.
    var sawTraffic = false
    /// Whether spinning still pays on this host's traffic (`BusyPollGovernor`).
    var busyPollGovernor: BusyPollGovernor
    /// The last frame a closed broker appended to a request, and whose it was (`peerStamp`).
    var lastPeerStamp: (userID: String, frame: Frame)?
    /// Requests a fault rule delayed or reordered, routed when due.
    var held = HeldMessages<HeldRequest>()

    let heartbeatInterval: Duration
    /// `configuration.busyPoll` in nanoseconds.
    let busyPollNanoseconds: UInt64
    /// `configuration.requestExpiry` in nanoseconds: added to the clock for every request queued.
    let requestExpiryNanoseconds: UInt64
    let workerExpiry: Duration
    let receiveByteLimit: Int

    init(socket: ZMQSocket, configuration: BrokerConfiguration, faults: FaultRules, logger: Logger, shared: BrokerShared) {
        self.socket = socket
        self.configuration = configuration
        self.faults = faults
        self.logger = logger
        self.shared = shared
        self.badInputLog = PeerLogLimiter(period: configuration.badInputLogPeriod)
        self.heartbeatInterval = configuration.heartbeatInterval
        self.busyPollNanoseconds = configuration.busyPoll.wholeNanoseconds
        self.requestExpiryNanoseconds = configuration.requestExpiry.wholeNanoseconds
        self.workerExpiry = configuration.heartbeatInterval * max(1, configuration.heartbeatLiveness)
        // Room for the identity, header and service frames on top of the body limit;
        // the body itself is measured exactly after receiving.
        self.receiveByteLimit = configuration.maxMessageBytes + 4096
        self.nextTick = now + configuration.statisticsInterval
        self.busyPollGovernor = BusyPollGovernor(budget: configuration.busyPollBudget)
    }

    /// Serves until stopped or the context is terminated.
    func run() {
        let poller = ZMQPoller()
        poller.add(socket)
        let wakeIndex = poller.add(fileDescriptor: shared.wake.fileDescriptor)
        while !shared.stopping.load(ordering: .acquiring) {
            do {
                try wait(poller)
                now = .now()
                if poller.isReadable(wakeIndex) { shared.wake.drain() }
                try drain()
                if !held.isEmpty { releaseHeld() }
                if now >= nextTick || shared.flushRequested.load(ordering: .acquiring) { tick() }
                if !unroutableWorkers.isEmpty {
                    try drain()
                    expireUnroutableWorkers()
                }
            } catch {
                if error.code == .terminated { break }
                logger.error("broker poll failed; continuing", metadata: ["flowbus.error": "\(error)"])
                now = .now()
            }
        }
        sayGoodbye()
        publish()
    }

    /// Blocks until the socket or the wake pipe is readable or the next tick is due; after traffic,
    /// busy-polls for `configuration.busyPoll` first.
    /// The timeouts are worked out in nanoseconds: `Duration`'s 128-bit arithmetic would cost some
    /// hundreds of instructions a wake-up.
    private func wait(_ poller: ZMQPoller) throws(ZMQError) {
        var timeout = now.nanoseconds(until: nextTick)
        if let due = held.nextDeadline { timeout = min(timeout, now.nanoseconds(until: due)) }
        guard busyPollNanoseconds > 0, timeout > 0 else {
            try poller.poll(timeoutNanoseconds: timeout)
            return
        }
        if sawTraffic {
            sawTraffic = false
            if busyPollGovernor.shouldSpin() {
                let spin = min(busyPollNanoseconds, timeout)
                tally.busyPolls += 1
                let started = MonotonicTime.realNow()
                let caught = try poller.spin(upToNanoseconds: spin)
                let spun = Int64(MonotonicTime.realNow().nanoseconds - started.nanoseconds)
                tally.busyPollNanoseconds += Int(spun)
                busyPollGovernor.record(caught: caught, spunFor: spun)
                if caught {
                    tally.busyPollHits += 1
                    return
                }
                timeout -= spin
            } else {
                tally.busyPollsSkipped += 1
            }
        }
        // What a sleep costs this thread is what a spin that catches saves; the governor weighs
        // spins against it.
        guard busyPollGovernor.shouldMeasureSleep() else {
            try poller.poll(timeoutNanoseconds: timeout)
            return
        }
        let wallStart = MonotonicTime.realNow()
        let cpuStart = Self.threadCPUNanoseconds()
        try poller.poll(timeoutNanoseconds: timeout)
        let cpu = Self.threadCPUNanoseconds() - cpuStart
        // Only a poll that slept (its wall time well beyond its CPU) measures a sleep: one that
        // found a message at once costs next to nothing and saved nothing.
        if Int64(MonotonicTime.realNow().nanoseconds - wallStart.nanoseconds) >= cpu + 2_000 {
            busyPollGovernor.recordSleep(cpuNanoseconds: cpu)
            tally.busyPollSleepCostNanoseconds = Int(busyPollGovernor.sleepCost)
        }
    }

    /// The CPU time this thread has used, ns (`CLOCK_THREAD_CPUTIME_ID`: a system call, not the vDSO).
    private static func threadCPUNanoseconds() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }

    /// Handles every message waiting on the socket. A client request to a known service and a
    /// worker's REPLY are handled where libzmq holds them (`BrokerLoop+Forwarding`); anything else
    /// is read as frames.
    private func drain() throws(ZMQError) {
        var handled = 0
        while try socket.receiveParts(
            dontWait: true, maxParts: configuration.maxFramesPerMessage, maxBytes: receiveByteLimit,
            readUserID: configuration.access != nil, { parts in
                if !forwarded(parts) {
                    handle(ReceivedMessage(frames: socket.frames(of: parts), totalBytes: parts.totalBytes, truncated: parts.truncated, userID: parts.userID))
                }
            }
        ) {
            handled += 1
            if handled & 1023 == 0 {
                now = .now()
                if now >= nextTick { tick(caughtUp: false) }
                if shared.stopping.load(ordering: .relaxed) { return }
            }
        }
    }

    private func handle(_ received: ReceivedMessage) {
        let frames = received.frames
        let layout: MDPLayout
        do {
            layout = try MDPLayout.parse(frames, from: 1)
        } catch {
            if received.truncated {
                // The body was cut off before the layout could see it; a client request's header
                // and service name still tell whom to answer.
                if frames.count >= 4, frames[1].isEmpty, frames[2] == MDP.clientHeader, !frames[3].isEmpty {
                    countBadInput(.oversize, peer: frames[0], "message of \(received.totalBytes) bytes; limit \(configuration.maxMessageBytes) bytes")
                    reject(.oversize, client: frames[0], service: frames[3],
                           detail: "request of \(received.totalBytes) bytes to \(frames[3].printable) is over the broker's limit of \(configuration.maxMessageBytes) bytes; send less per request")
                } else {
                    countBadInput(.oversize, peer: frames[0], "message of \(received.totalBytes) bytes is over the limit and not valid MDP in its first frames")
                }
            } else if case .missingBody = error {
                requestWithoutBody(frames, error)
            } else {
                countBadInput(error.kind, peer: frames[0], error.description)
            }
            return
        }
        if received.truncated || bodyBytes(frames, from: layout.bodyStart) > configuration.maxMessageBytes {
            oversize(frames, layout: layout, totalBytes: received.totalBytes)
            return
        }
        if let access = configuration.access, !permits(access, received.userID, frames, layout: layout) { return }
        switch layout.kind {
        case .client:
            sawTraffic = true
            if configuration.access != nil {
                // Closed: the worker learns who asked (MDP.peerPrefix), from the ZAP handler's word.
                var stamped = frames
                stamped.append(peerStamp(received.userID))
                clientRequest(stamped, layout: layout, from: received.userID)
            } else {
                clientRequest(frames, layout: layout, from: received.userID)
            }
        case .worker(let command):
            if command == .reply { sawTraffic = true }
            workerCommand(command, frames, layout: layout, from: received.userID)
        }
    }

    /// Closed mode: a worker command from anyone but a plugin or the host is refused with
    /// DISCONNECT (and a worker already under that routing id — taken over by the sender — is
    /// forgotten, so no request goes to it); a client's request to a service only plugins may
    /// call is answered with a `forbidden` rejection.
    private func permits(_ access: BusAccess, _ userID: String?, _ frames: [Frame], layout: MDPLayout) -> Bool {
        let peer = PeerClass(userID: userID)
        switch layout.kind {
        case .client:
            let service = frames[layout.subject]
            guard !access.mayCall(service, as: peer) else { return true }
            reject(.forbidden, client: frames[0], service: service,
                   detail: "only the host's plugins may call \(service.printable); a \(peer.rawValue) peer (\(userID ?? "no identity")) may call \(access.clientServicePrefixes.map { $0 + "*" }.joined(separator: ", "))")
            return false
        case .worker(let command):
            guard !peer.mayServe else { return true }
            let identity = frames[0]
            // An operator may serve what BusAccess lets it (a simulation's coordinator): its
            // READY names such a service, and its later commands come from a worker registered so.
            if command == .ready, access.mayServe(frames[layout.subject], as: peer) { return true }
            if command != .ready, let worker = workers[FrameKey(identity)], access.mayServe(worker.service.name, as: peer) { return true }
            tally.unauthorizedWorkers += 1
            if let worker = workers[FrameKey(identity)] {
                tally.workersDisconnected += 1
                removeWorker(worker)
            }
            sendWorkerCommand(MDP.disconnectFrame, to: identity)
            if badInputLog.shouldLog(peer: identity, kind: "unauthorizedWorker") {
                logger.warning("refused a worker command from a peer that is not one of the host's plugins (logged once per peer per period)", metadata: [
                    "flowbus.peer": "\(identity.printable)", "flowbus.user_id": "\(userID ?? "none")",
                    "flowbus.hint": "only processes the host launched may serve; add it to the manifest, or start the host with --open",
                ])
            }
            return false
        }
    }

    func bodyBytes<Frames: RandomAccessCollection>(_ frames: Frames, from start: Int) -> Int
    where Frames.Index == Int, Frames.Element: Collection {
        var total = 0
        var index = start
        while index < frames.count {
            total += frames[index].count
            index += 1
        }
        return total
    }

    func countBadInput(_ kind: BadInputKind, peer: Frame, _ detail: @autoclosure () -> String) {
        tally.badInput[kind] += 1
        if badInputLog.shouldLog(peer: peer, kind: kind.rawValue) {
            logger.notice("dropped bad MDP input (logged once per peer per period)", metadata: [
                "flowbus.peer": "\(peer.printable)",
                "flowbus.kind": "\(kind.rawValue)",
                "flowbus.detail": "\(detail())",
            ])
        }
    }
}
