import Foundation
import Logging
import MessagePath
import Synchronization
import ZeroMQ

/// The server's state and sockets; lives on the server thread only.
final class CloneServerLoop {
    struct Stored: PackableEntry {
        /// The value as it came, or packed (`ValueDeltas`): read it with `value(of:key:)`.
        var held: HeldBytes
        var sequence: UInt64
        // The writer's UUID is not kept: it went out with the KVPUB (and the confirmation), a
        // snapshot sends none, and 16 bytes more in every slot of the map cost 130 bytes a session.
        /// The key waits in `packedValues`' queue.
        var queued = false
        /// The writer's properties frame, without the server's own (`sprev`).
        var properties: [UInt8]
        /// Which agent wrote it, and its count of writes then (`wseq`); nil if it did not say.
        var order: WriteOrder? = nil

        init(value: [UInt8], sequence: UInt64, properties: [UInt8], order: WriteOrder? = nil) {
            self.held = .whole(value)
            self.sequence = sequence
            self.properties = properties
            self.order = order
        }
    }

    let configuration: CloneServerConfiguration
    let endpoints: CloneEndpoints
    let faults: FaultRules
    let shared: CloneServerShared
    let logger: Logger
    let logLimiter: PeerLogLimiter
    let snapshotLimiter: PeerRateLimiter

    let snapshot: ZMQSocket
    let publisher: ZMQSocket
    let collector: ZMQSocket
    let poller = ZMQPoller()
    let snapshotIndex: Int
    let publisherIndex: Int
    let collectorIndex: Int
    let wakeIndex: Int

    var store: [KeyBytes: Stored] = [:]
    /// What packs values that stay unchanged (`packValuesAfter`); the keys waiting for it, and
    /// the deltas.
    var deltas = ValueDeltas()
    var packedValues = PackedValues<KeyBytes>()
    /// The keys of `store` by subtree, so a snapshot reads only its own.
    var index = SubtreeIndex()
    /// Bytes (keys and values) held, in all and per session prefix (`/s/<id>/`): the quotas.
    var storeBytes = 0
    var sessionBytes: [KeyBytes: Int] = [:]
    var sequence: UInt64 = 0
    /// The sequence of the last KVPUB of each session subtree `/s/<id>/`.
    var sessions: [KeyBytes: UInt64] = [:]
    var expiries = ExpiryQueue()
    var statistics = CloneServerStatistics()
    var badInput = [Int](repeating: 0, count: CloneBadInput.allCases.count)
    var lastPublished = MonotonicTime.now()
    /// `configuration.hugzInterval` in nanoseconds, worked out once: the loop adds it to
    /// `lastPublished` at every wake-up, and a `Duration` sum costs 128-bit arithmetic.
    let hugzIntervalNanoseconds: UInt64
    /// When the next HUGZ is due, if nothing is published before.
    var hugzDue: MonotonicTime { lastPublished.adding(nanoseconds: hugzIntervalNanoseconds) }
    var hugzRequested = false
    var lastLossySend = MonotonicTime(nanoseconds: 0)
    var nextFlush = MonotonicTime.now()
    /// Nothing moved at the last flush: none is due until the loop wakes for something else
    /// (`StatisticsFlush`).
    var flushIdle = false
    var publishedStatistics: CloneServerStatistics?
    /// The UUIDs of the last confirmed writes: a write sent again (its confirmation was late or
    /// lost) is confirmed again, not applied again.
    var confirmedWrites = RecentWriteIDs(capacity: 65_536)
    /// Confirmations to send at the end of this collector batch, by agent id.
    var pendingAcks: [KeyBytes: [UInt8]] = [:]
    let collectorReceiveLimit: Int
    /// The map on disk, when the configuration names a file.
    let journal: CloneJournal?
    var journalFailures = 0
    /// Writes a fault rule delayed or reordered, applied when due.
    var held = HeldMessages<AcceptedSet>()
    /// The write order of recently deleted keys: a set that was sent before the delete but
    /// arrives after it must not bring the key back.
    var deletedOrders = RecentDeletes(capacity: 65_536)
    /// The newest incarnation each writer has written as (`wgen`): one per plugin replica.
    var writerGenerations: [KeyBytes: UInt64] = [:]
    /// The agent ids of `wseq`, one array each: every key an agent writes shares it.
    var writerNames = InternedBytes(capacity: 4096)
    /// The writers of `wgen` and the agents of `ack`, the same way.
    var generationNames = InternedBytes(capacity: 4096)
    var ackNames = InternedBytes(capacity: 4096)
    /// The value last stored, whose array the next one shares when it holds the same bytes.
    var lastStoredValue: [UInt8] = []
    /// Where a published update's properties frame is made when the server adds its own line
    /// (`sprev`): the stored properties stay as they are, and no array is made per update.
    var publishedProperties: [UInt8] = []
    /// The value packed last and its delta: the second copy of a view model's state (`/v/`,
    /// then `/s/`) shares the first one's delta as it shared its bytes.
    var lastPacked: (value: [UInt8], name: ArraySlice<UInt8>, delta: [UInt8])?
    /// `configuration.checkedPrefixes` as bytes: values under them must end with their check.
    let checkedPrefixes: [[UInt8]]

    init(
        context: ZMQContext, configuration: CloneServerConfiguration, endpoints: CloneEndpoints,
        faults: FaultRules, shared: CloneServerShared, logger: Logger
    ) throws(CloneStartError) {
        self.configuration = configuration
        self.hugzIntervalNanoseconds = configuration.hugzInterval.wholeNanoseconds
        self.endpoints = endpoints
        self.faults = faults
        self.shared = shared
        self.logger = logger
        self.logLimiter = PeerLogLimiter(period: configuration.badInputLogPeriod)
        self.snapshotLimiter = PeerRateLimiter(configuration.snapshotRate)
        // Key, sequence, UUID and properties frames ride on top of the largest value.
        self.collectorReceiveLimit = configuration.maxValueBytes + 64 * 1024
        self.checkedPrefixes = configuration.checkedPrefixes.map { Array($0.utf8) }
        self.journal = try configuration.journalPath.map { path throws(CloneStartError) in try CloneJournal(path: path) }

        snapshot = try Self.makeSocket(context, .router, "snapshot", configuration) { socket throws(ZMQError) in
            try socket.setRouterMandatory(true)
            try socket.setSendHighWaterMark(configuration.snapshotHighWaterMark)
        }
        publisher = try Self.makeSocket(context, .xpub, "publisher", configuration) { socket throws(ZMQError) in
            try socket.setSendHighWaterMark(configuration.publisherHighWaterMark)
            // Every subscription reaches us (not only the first of each prefix): each one gets a HUGZ.
            try socket.setXPubVerbose(true)
            // And every unsubscription, one per subscriber gone: clients per session are counted.
            try socket.setXPubVerboseUnsubscribe(true)
            // Closed mode applies each subscription only once the peer may read it.
            if configuration.access != nil { try socket.setXPubManual(true) }
            // A full subscriber queue reports EAGAIN instead of a silent drop, so we can count it.
            try socket.setXPubNoDrop(true)
        }
        collector = try Self.makeSocket(context, .sub, "collector", configuration) { socket throws(ZMQError) in
            try socket.setReceiveHighWaterMark(configuration.collectorHighWaterMark)
            try socket.subscribe("")
            // Tells writing agents this server takes KVSETS batches (their XPUB sees it).
            try socket.subscribe(KVSetBatch.command)
        }
        let plainIPC = configuration.curveSecretKey != nil && configuration.plainIPC
        for each in [endpoints] + configuration.additionalEndpoints {
            try Self.bind(snapshot, each.snapshot, "snapshot", plainIPC: plainIPC)
            try Self.bind(publisher, each.publisher, "publisher", plainIPC: plainIPC)
            try Self.bind(collector, each.collector, "collector", plainIPC: plainIPC)
        }

        snapshotIndex = poller.add(snapshot)
        publisherIndex = poller.add(publisher)
        collectorIndex = poller.add(collector)
        wakeIndex = poller.add(fileDescriptor: shared.wake.fileDescriptor)
        try restoreFromJournal()
    }

    private static func makeSocket(
        _ context: ZMQContext, _ type: SocketType, _ role: String, _ configuration: CloneServerConfiguration,
        _ setUp: (ZMQSocket) throws(ZMQError) -> Void
    ) throws(CloneStartError) -> ZMQSocket {
        do {
            let socket = try ZMQSocket(context: context, type: type, linger: .zero)
            try socket.setMaximumMessageSize(configuration.transportMaxMessageBytes)
            if let secretKey = configuration.curveSecretKey {
                try socket.makeCurveServer(secretKey: secretKey)
            }
            if let domain = configuration.zapDomain {
                try socket.setZAPDomain(domain)
            }
            try setUp(socket)
            return socket
        } catch {
            throw .socket(role: role, error)
        }
    }

    private static func bind(_ socket: ZMQSocket, _ endpoint: String, _ role: String, plainIPC: Bool) throws(CloneStartError) {
        do {
            if plainIPC { try socket.setCurveServer(forBinding: endpoint) }
            try socket.bind(endpoint)
        } catch {
            throw .bind(endpoint: endpoint, role: role, error)
        }
    }

    func run() {
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
                    for command in shared.takeCommands() { command(self) }
                }
                if poller.isReadable(collectorIndex) { try drainCollector() }
                if poller.isReadable(snapshotIndex) { try drainSnapshotRequests() }
                if poller.isReadable(publisherIndex) { try drainSubscriptions() }
                let now = MonotonicTime.now()
                if !held.isEmpty { try releaseHeld(now: now) }
                try expireDue(now: now)
                try sendHugzIfDue(now: now)
                if let due = packedValues.nextDue, due <= now { packDue(now: now) }
                if nextFlush <= now { flushStatistics(now: now) }
            } catch {
                if error.code == .terminated { break }
                logger.error("clone server loop: \(error)", metadata: ["flowbus.service": "clone"])
            }
        }
        flushStatistics(now: .now())
    }

    /// Sleeps until the next HUGZ, ttl deadline or statistics flush: nanoseconds, worked out on
    /// the monotonic clock's nanoseconds (no `Duration` arithmetic once a wake-up).
    private func pollTimeout() -> UInt64 {
        let now = MonotonicTime.now()
        var deadline = hugzRequested ? now : hugzDue
        if let expiry = expiries.nextDeadline, expiry < deadline { deadline = expiry }
        if let due = held.nextDeadline, due < deadline { deadline = due }
        if nextFlush < deadline { deadline = nextFlush }
        if let due = packedValues.nextDue, due < deadline { deadline = due }
        return now.nanoseconds(until: deadline)
    }

    private func sendHugzIfDue(now: MonotonicTime) throws(ZMQError) {
        guard hugzRequested || hugzDue <= now else { return }
        hugzRequested = false
        lastPublished = now
        let frames = CloneMessage.hugz(sequence: 0).frames
        if try !sendPublished(frames[0], frames[1], frames[2], frames[3], frames[4]) {
            statistics.publishBlocked += 1
        }
        statistics.hugzSent += 1
    }

    /// Subscription messages: counted, and each one earns a HUGZ so a new subscriber learns at
    /// once that its subscription is in place (the agent waits for that before asking for a snapshot).
    private func drainSubscriptions() throws(ZMQError) {
        var handled = 0
        let access = configuration.access
        while handled < configuration.batchLimit,
              let received = try publisher.receiveFrame(dontWait: true, readUserID: access != nil, readProperty: capabilityProperty) {
            handled += 1
            let frame = received.frame
            if frame.first == 1 {
                statistics.subscriptionsReceived += 1
                hugzRequested = true
            }
            // Manual mode: subscribe or unsubscribe on behalf of the peer whose message this is.
            guard let access, let kind = frame.first, kind <= 1 else {
                countFollower(frame)
                continue
            }
            let prefix = Array(frame.dropFirst())
            if kind == 0 {
                try publisher.unsubscribe(prefix)
                countFollower(frame)
            } else if access.mayRead(prefix, as: PeerClass(userID: received.userID), capability: received.property) {
                try publisher.subscribe(prefix)
                countFollower(frame)
            } else {
                statistics.subscriptionsRefused += 1
                logRefusal("clone publisher: a subscription was not applied", userID: received.userID, [
                    "flowbus.prefix": "\(prefix.printable)",
                    "flowbus.reason": "a client may subscribe to the public subtrees and to /s/<id>/ of a session whose capability its connection presents (X-Flowbus-Capability), nothing else",
                ])
            }
        }
    }

    /// A (un)subscription of one session's subtree, `/s/<id>/`, counted for that session.
    private func countFollower(_ frame: [UInt8]) {
        guard let kind = frame.first, kind <= 1, frame.count > 4, frame[1] == UInt8(ascii: "/"), frame[2] == UInt8(ascii: "s"),
              frame[3] == UInt8(ascii: "/"), frame.last == UInt8(ascii: "/") else { return }
        let id = frame[4..<(frame.count - 1)]
        guard !id.isEmpty, !id.contains(UInt8(ascii: "/")) else { return }
        let session = String(decoding: id, as: UTF8.self)
        shared.followers.withLock { followers in
            let count = (followers[session] ?? 0) + (kind == 1 ? 1 : -1)
            followers[session] = count > 0 ? count : nil
        }
    }

    /// The metadata property read with each request and subscription: only when capabilities are checked.
    var capabilityProperty: String? { configuration.access?.capabilities == nil ? nil : BusAccess.capabilityProperty }

    func flushStatistics(now: MonotonicTime) {
        statistics.sequence = sequence
        statistics.keysStored = store.count
        statistics.storeBytes = storeBytes
        statistics.valuesPacked = packedValues.tally.values
        statistics.packedBytes = packedValues.tally.bytes
        statistics.packedValueBytes = packedValues.tally.valueBytes
        statistics.packReferences = deltas.references.count
        statistics.packReferenceBytes = deltas.referenceFootprint
        statistics.packArenaBytes = packedValues.arena.usedBytes
        statistics.sessions = sessions.count
        for kind in CloneBadInput.allCases {
            let count = badInput[kind.index]
            if count > 0 { statistics.badInput[kind.rawValue] = count }
        }
        let snapshot = statistics
        let changed = snapshot != publishedStatistics
        if changed {
            shared.statistics.withLock { $0 = snapshot }
            publishedStatistics = snapshot
        }
        (nextFlush, flushIdle) = StatisticsFlush.next(after: now, interval: configuration.statisticsInterval, quiet: !changed)
    }

    /// Closed mode's refusals, logged at most once per peer (`peer`, else the User-Id) and kind
    /// per period.
    func logRefusal(_ message: String, userID: String?, peer: [UInt8]? = nil, _ metadata: Logger.Metadata) {
        guard logLimiter.shouldLog(peer: peer ?? Array((userID ?? "none").utf8), kind: message) else { return }
        logger.warning("\(message) (logged once per peer per period)", metadata: metadata.merging([
            "flowbus.service": "clone", "flowbus.user_id": "\(userID ?? "none")",
        ]) { $1 })
    }

    func countBadInput(_ error: CloneDecodeError, peer: [UInt8], channel: String) {
        badInput[error.kind.index] += 1
        if logLimiter.shouldLog(peer: peer, kind: error.kind.rawValue) {
            logger.warning("clone \(channel): dropped bad input: \(error)", metadata: [
                "flowbus.service": "clone", "flowbus.peer": "\(peer.printable)",
                "flowbus.kind": "\(error.kind.rawValue)",
            ])
        }
    }

    func entries(prefix: String) -> [CloneEntry] {
        let prefixBytes = Array(prefix.utf8)
        return store.compactMap { key, stored -> CloneEntry? in
            guard key.bytes.starts(with: prefixBytes) else { return nil }
            return CloneEntry(
                key: key.string, value: value(of: stored, key: key.bytes), sequence: stored.sequence,
                uuid: nil,
                properties: (try? CloneProperties(decoding: stored.properties)) ?? [])
        }.sorted { $0.key < $1.key }
    }
}

extension CloneBadInput {
    var index: Int { Self.allCases.firstIndex(of: self)! }
}
