import Logging
import MessagePath
import Synchronization
import ZeroMQ

/// The agent's sockets and sync state; lives on the agent thread only.
final class CloneAgentLoop {
    struct Subscription {
        enum Phase { case waiting, syncing, synced }
        let subtree: String
        let subtreeBytes: [UInt8]
        var phase = Phase.waiting
        var hasSynced = false
        var lastSequence: UInt64 = 0
        var snapshotSequence: UInt64 = 0
        /// The sequence of the last KVPUB applied per session subtree since the snapshot.
        var sessions: [String: UInt64] = [:]
        /// Live updates that came while the snapshot travels, applied after it.
        var buffer: [CloneUpdate] = []
        var overflowed = false
        /// A message since (re)subscribing or (re)connecting proved the server has this subscription.
        var proven = false
        var subscribedAt = MonotonicTime.now()
        /// Its snapshot was asked for before `proven`; the first message decides whether to ask again.
        var snapshotUnproven = false
        /// That first message, kept until the snapshot's sequence is known.
        var proof: Proof?
    }

    struct SnapshotInFlight {
        var subtree: String
        var deadline: MonotonicTime
        var entries: [String: CloneEntry] = [:]
    }

    let context: ZMQContext
    let endpoints: CloneEndpoints
    let configuration: CloneAgentConfiguration
    let shared: CloneAgentShared
    /// When the map's next value falls due for packing (read with the map's lock where it changes).
    var packDue: MonotonicTime?
    let logger: Logger
    let logLimiter: PeerLogLimiter

    let subscriber: ZMQSocket
    var snapshot: ZMQSocket
    let writer: ZMQSocket
    let monitor: SocketMonitor
    var poller = ZMQPoller()
    var snapshotIndex = 0
    var subscriberIndex = 0
    var writerIndex = 0
    var monitorIndex = 0
    var wakeIndex = 0

    var subscriptions: [Subscription] = []
    var pendingSyncs: [String] = []
    var inFlight: SnapshotInFlight?
    /// When the subscriber's connection to the publisher last came up (its handshake); nil while down.
    var connectedAt: MonotonicTime?
    /// Set by the first HUGZ: only then does silence mean the server is gone.
    var serverSendsHugz = false
    var serverLost = false
    var heardFromServer = false
    var lastHeard = MonotonicTime.now()
    /// `configuration.serverTimeout` in nanoseconds, worked out once: the loop adds it to
    /// `lastHeard` at every wake-up, and a `Duration` sum costs 128-bit arithmetic.
    let serverTimeoutNanoseconds: UInt64
    /// When silence since `lastHeard` means the server is gone (once it sends HUGZ).
    var silenceDeadline: MonotonicTime { lastHeard.adding(nanoseconds: serverTimeoutNanoseconds) }

    var collectorSubscriptions = 0
    /// When the poll now sleeping means to wake at the latest (`pollTimeout`): a writer's thread
    /// that sent writes wakes it sooner if one's confirmation falls due before (`sendForWriter`).
    var plannedWake = MonotonicTime.now()
    /// When writes were last taken from the outbox, by this thread or a writer's (`sendForWriter`).
    var lastTaken = MonotonicTime.now()
    /// Writes closer than this to the last ones taken are a burst: sent together by this thread.
    static let burstNanoseconds: UInt64 = 100_000
    /// Subscriptions to `KVSetBatch.command` on the writer: a collector that takes batches.
    var batchSubscriptions = 0
    /// Writes waiting for the collector, in the order they go: each batch the outbox gave that
    /// could not all go at once, kept as the array it came in (moved, not copied write by
    /// write), and resends after them. The first batch's writes before `heldStart` are gone.
    var heldBatches: [[PreparedWrite]] = []
    /// The first batch that still holds writes waiting (the ones before it are drained).
    var heldBatchStart = 0
    var heldStart = 0
    /// How many writes wait in `heldBatches`.
    var heldCount = 0
    /// Drained arrays kept for the outbox to be traded for at the next takes (`takeOutbox`):
    /// the outbox's writers append to one without allocating.
    var spareBatches: [[PreparedWrite]] = []
    /// The lines every KVSET of this agent carries (`CloneAgent.OwnLines`).
    let ownLines: CloneAgent.OwnLines
    /// Where a KVSET's properties frame is written before it is sent.
    let propertiesScratch = FrameScratch(capacity: 256)
    /// Where a KVSETS batch's entries are packed before it is sent.
    let batchScratch = FrameScratch(capacity: 4096)
    /// Every write numbered up to this one is settled (see `CloneAgent.settle`); told to waiters
    /// by `announceSettled`, once this pass's changes are in the map: a writer that waited for
    /// its write then reads it back (the server publishes a write before it confirms it).
    var writesSettled: UInt64 = 0
    private var settledAnnounced: UInt64 = 0
    var writeBlocked = false
    /// `ACK/<agent id>` when writes are confirmed (`CloneAgentConfiguration.confirmWrites`).
    let ackTopic: [UInt8]?
    var confirmations: WriteConfirmations

    var changes: [CloneUpdate] = []
    var statistics = CloneAgentStatistics()
    var badInput = [Int](repeating: 0, count: CloneBadInput.allCases.count)
    var nextFlush = MonotonicTime.now()
    /// Nothing moved at the last flush: none is due until the loop wakes for something else
    /// (`StatisticsFlush`), so an idle agent does not wake every `statisticsInterval`.
    var flushIdle = false
    var publishedStatistics: CloneAgentStatistics?

    init(
        context: ZMQContext, endpoints: CloneEndpoints, configuration: CloneAgentConfiguration,
        shared: CloneAgentShared, ackID: String? = nil, ownLines: CloneAgent.OwnLines, logger: Logger
    ) throws(CloneStartError) {
        self.ownLines = ownLines
        self.ackTopic = ackID.map { Array((CloneProperties.ackTopicPrefix + $0).utf8) }
        self.confirmations = WriteConfirmations(firstWait: configuration.confirmAfter, maxTries: configuration.confirmTries)
        self.context = context
        self.endpoints = endpoints
        self.configuration = configuration
        self.serverTimeoutNanoseconds = configuration.serverTimeout.wholeNanoseconds
        self.shared = shared
        self.logger = logger
        self.logLimiter = PeerLogLimiter(period: configuration.logPeriod)

        // Subscriber first, so updates published while the snapshot travels are not lost.
        subscriber = try Self.makeSocket(context, .sub, "subscriber", configuration) { socket throws(ZMQError) in
            try socket.setReceiveHighWaterMark(configuration.receiveHighWaterMark)
        }
        do {
            monitor = try SocketMonitor(subscriber, events: [.disconnected, .handshakeSucceeded])
        } catch {
            throw .socket(role: "subscriber monitor", error)
        }
        for subtree in Self.withoutOverlaps(configuration.subtrees) {
            try Self.subscribe(subscriber, to: subtree)
            subscriptions.append(Subscription(subtree: subtree, subtreeBytes: Array(subtree.utf8)))
            pendingSyncs.append(subtree)
        }
        if let ackID { try Self.subscribe(subscriber, to: CloneProperties.ackTopicPrefix + ackID) }
        // Subscribed last: a HUGZ that reaches us proves the subtrees' subscriptions arrived.
        try Self.subscribe(subscriber, to: "HUGZ")
        try Self.connect(subscriber, endpoints.publisher, "subscriber")
        snapshot = try Self.makeSnapshotSocket(context, endpoints, configuration)
        writer = try Self.makeSocket(context, .xpub, "writer", configuration) { socket throws(ZMQError) in
            // Queue, never drop, when the collector's queue is full: the write waits in `heldBatches`.
            try socket.setXPubNoDrop(true)
        }
        try Self.connect(writer, endpoints.collector, "writer")

        subscriberIndex = poller.add(subscriber)
        snapshotIndex = poller.add(snapshot)
        writerIndex = poller.add(writer)
        monitorIndex = poller.add(monitor.socket)
        wakeIndex = poller.add(fileDescriptor: shared.wake.fileDescriptor)
        poller.gate = shared.shortcut.gate
        shared.view.withLock { $0.packAfter = configuration.packValuesAfter }
    }

    func run() {
        // Held but while the poll sleeps: a writer's thread may then send (`sendForWriter`).
        shared.shortcut.gate.lock()
        shared.shortcut.loop = self
        defer {
            shared.shortcut.loop = nil
            shared.shortcut.gate.unlock()
        }
        while !shared.stopping.load(ordering: .acquiring) {
            do {
                try poller.poll(timeoutNanoseconds: pollTimeout())
                shared.passes.add(1, ordering: .relaxed)
                if flushIdle {
                    flushIdle = false
                    nextFlush = .now() + configuration.statisticsInterval
                }
                if poller.isReadable(wakeIndex) {
                    shared.wake.drain()
                    try takeCommands()
                }
                if poller.isReadable(monitorIndex) { try drainMonitor() }
                if poller.isReadable(subscriberIndex) { try drainSubscriber() }
                if poller.isReadable(snapshotIndex) { try drainSnapshot() }
                if poller.isReadable(writerIndex) { try drainCollectorSubscriptions() }
                try takeOutbox()
                try sendHeldWrites()
                let now = MonotonicTime.now()
                try checkTimers(now: now)
                try requestNextSnapshot(now: now)
                publishChanges()
                announceSettled()
                if let due = packDue, due <= now {
                    packDue = shared.view.withLock { view in
                        view.packDue(now: now)
                        return view.packedValues.nextDue
                    }
                }
                if nextFlush <= now { flushStatistics(now: now) }
            } catch {
                if error.code == .terminated { break }
                logger.error("clone agent loop: \(error)", metadata: ["flowbus.service": "clone-agent"])
            }
        }
        publishChanges()
        announceSettled()
        flushStatistics(now: .now())
    }

    /// Tells the threads waiting on the writes' settlement how far it got.
    func announceSettled() {
        guard writesSettled != settledAnnounced else { return }
        settledAnnounced = writesSettled
        shared.settled.advance(to: writesSettled)
    }

    /// Nanoseconds until the next deadline of the loop, worked out on the monotonic clock's
    /// nanoseconds (no `Duration` arithmetic once a wake-up).
    private func pollTimeout() -> UInt64 {
        let now = MonotonicTime.now()
        if writeBlocked && collectorSubscriptions > 0 {
            plannedWake = shared.settled.plan(wake: now.adding(nanoseconds: 1_000_000))
            return now.nanoseconds(until: plannedWake)
        }
        var deadline = nextFlush
        let silence = silenceDeadline
        if serverSendsHugz && !serverLost && silence < deadline { deadline = silence }
        if let inFlight, inFlight.deadline < deadline { deadline = inFlight.deadline }
        if let probe = probeDeadline(), probe < deadline { deadline = probe }
        if collectorSubscriptions > 0, let due = confirmations.nextDue(), due < deadline { deadline = due }
        if let packDue, packDue < deadline { deadline = packDue }
        // Bodies waiting for writes to settle (`CloneAgent.whenSettled`) are given up at their deadline.
        plannedWake = shared.settled.plan(wake: deadline)
        return now.nanoseconds(until: plannedWake)
    }

    private func takeCommands() throws(ZMQError) {
        let commands = shared.commands.withLock { pending in
            defer { pending.removeAll() }
            return pending
        }
        for command in commands {
            switch command {
            case .subscribe(let subtree):
                try addSubscription(subtree)
            }
        }
    }

    private func addSubscription(_ subtree: String) throws(ZMQError) {
        if subscriptions.contains(where: { subtree.utf8.starts(with: $0.subtreeBytes) }) { return }
        try subscriber.subscribe(subtree)
        // Wider than some we have: those become part of this one.
        subscriptions.removeAll { $0.subtree.utf8.starts(with: subtree.utf8) }
        pendingSyncs.removeAll { $0.utf8.starts(with: subtree.utf8) }
        subscriptions.append(Subscription(subtree: subtree, subtreeBytes: Array(subtree.utf8)))
        pendingSyncs.append(subtree)
        // Re-subscribing HUGZ makes a Flowbus server answer with one, after it has the new subtree.
        try subscriber.unsubscribe("HUGZ")
        try subscriber.subscribe("HUGZ")
        shared.synced.store(false, ordering: .releasing)
    }

    private func drainMonitor() throws(ZMQError) {
        while let frames = try monitor.socket.receiveMessage(dontWait: true) {
            guard let event = MonitorEvent(frames: frames) else { continue }
            if event.event.contains(.handshakeSucceeded) {
                connectedAt = .now()
                if serverLost {
                    serverLost = false
                    logOnce("server-back", "clone server connected again; resyncing")
                }
            } else if event.event.contains(.disconnected) {
                let wasConnected = connectedAt != nil
                connectedAt = nil
                // The subscriptions travel again on the next connection, maybe to a new server.
                for index in subscriptions.indices { subscriptions[index].proven = false }
                if wasConnected && !serverLost {
                    serverGone(reason: "the connection to the publisher dropped")
                }
            }
        }
    }

    private func checkTimers(now: MonotonicTime) throws(ZMQError) {
        if ackTopic != nil, collectorSubscriptions > 0 { resendUnconfirmed(now: now) }
        shared.settled.expire(now: now)
        if serverSendsHugz && !serverLost && silenceDeadline <= now {
            serverGone(reason: "nothing (not even HUGZ) heard for \(configuration.serverTimeout)")
        }
        if let inFlight, inFlight.deadline <= now {
            statistics.snapshotTimeouts += 1
            logOnce("snapshot-timeout", "no KTHXBAI for subtree '\(inFlight.subtree)' in time; asking again")
            try restartSnapshotSocket()
            pendingSyncs.insert(inFlight.subtree, at: 0)
            self.inFlight = nil
        }
    }

    /// No word from the server: every subtree is resynced once it speaks again.
    func serverGone(reason: String) {
        serverLost = true
        if heardFromServer { statistics.serverLosses += 1 }
        logOnce("server-lost", "clone server unreachable (\(reason)); will resync when it is back")
        if inFlight != nil {
            inFlight = nil
            try? restartSnapshotSocket()
        }
        for index in subscriptions.indices { markForResync(index) }
    }

    func restartSnapshotSocket() throws(ZMQError) {
        // A new DEALER discards the replies to the abandoned request.
        do {
            let fresh = try Self.makeSnapshotSocket(context, endpoints, configuration)
            snapshot = fresh
            let items = ZMQPoller()
            subscriberIndex = items.add(subscriber)
            snapshotIndex = items.add(snapshot)
            writerIndex = items.add(writer)
            monitorIndex = items.add(monitor.socket)
            wakeIndex = items.add(fileDescriptor: shared.wake.fileDescriptor)
            items.gate = shared.shortcut.gate
            poller = items
        } catch {
            logger.error("clone agent: \(error)", metadata: ["flowbus.service": "clone-agent"])
        }
    }

    func logOnce(_ kind: String, _ message: String) {
        if logLimiter.shouldLog(peer: [], kind: kind) {
            logger.info("\(message)", metadata: ["flowbus.service": "clone-agent"])
        }
    }

    func countBadInput(_ error: CloneDecodeError, channel: String) {
        badInput[error.kind.index] += 1
        if logLimiter.shouldLog(peer: Array(channel.utf8), kind: error.kind.rawValue) {
            logger.warning("clone agent \(channel): dropped bad input: \(error)", metadata: [
                "flowbus.service": "clone-agent", "flowbus.kind": "\(error.kind.rawValue)",
            ])
        }
    }

    /// Counts a message accepted although 12/CHP lays it out otherwise; logged once per kind and period.
    func tolerate(_ kind: CloneLeniency) {
        statistics.tolerated[kind.rawValue, default: 0] += 1
        if logLimiter.shouldLog(peer: [], kind: "tolerated-\(kind.rawValue)") {
            logger.info("clone agent accepted a message that differs from 12/CHP as the zguide's reference servers do (\(kind.rawValue)); counted in statistics.tolerated", metadata: [
                "flowbus.service": "clone-agent", "flowbus.kind": "\(kind.rawValue)",
            ])
        }
    }

    func flushStatistics(now: MonotonicTime) {
        for kind in CloneBadInput.allCases where badInput[kind.index] > 0 {
            statistics.badInput[kind.rawValue] = badInput[kind.index]
        }
        statistics.writesHeld = heldCount
        let snapshot = statistics
        let changed = snapshot != publishedStatistics
        if changed {
            shared.statistics.withLock { $0 = snapshot }
            publishedStatistics = snapshot
        }
        let wasSynced = shared.synced.load(ordering: .relaxed)
        updateSynced()
        // Quiet: no counter moved, nothing is being synced or written. Retries of a snapshot
        // request or of held writes are driven by this loop's passes, so those keep it armed.
        let quiet = !changed && wasSynced == shared.synced.load(ordering: .relaxed)
            && pendingSyncs.isEmpty && inFlight == nil && heldCount == 0 && !writeBlocked
        (nextFlush, flushIdle) = StatisticsFlush.next(after: now, interval: configuration.statisticsInterval, quiet: quiet)
    }

    func updateSynced() {
        let synced = !serverLost && !subscriptions.isEmpty && subscriptions.allSatisfy { $0.phase == .synced }
        shared.synced.store(synced, ordering: .releasing)
        // Stored first: a task that registers after this finds it synced and does not wait.
        if synced { shared.resumeSyncWaiters() }
    }
}
