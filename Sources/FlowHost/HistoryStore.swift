/// The events of each session, within `SessionHistoryLimits`. Guarded by SessionHistory's lock.
struct HistoryStore {
    /// One per session the history keeps (4,096 by default): its fields are ordered and sized so
    /// it is 48 bytes, where plain `Int`s made it 64 (16 bytes of each slot of `logs`).
    struct SessionLog {
        var events: EventRing
        /// Events dropped to make room (in the ring's padding).
        var droppedCount: UInt32 = 0
        var lastActivity: Int64
        /// The host time the session's record was deleted (closeSession); nil while open.
        var closedAt: Int64?

        var dropped: Int { Int(droppedCount) }

        /// Adds `event` (`packed`: the same, as kept); true when the oldest was dropped to make room.
        mutating func record(_ event: TraceEvent, packed: PackedTraceEvent) -> Bool {
            let dropped = events.append(packed)
            if dropped { droppedCount &+= 1 }
            lastActivity = max(lastActivity, event.atUnixNanos)
            if event.kind == .deleted, event.key?.hasSuffix("/meta") == true {
                closedAt = event.atUnixNanos
            } else if event.kind == .record {
                closedAt = event.open == false ? event.atUnixNanos : nil
            }
            return dropped
        }
    }

    let limits: SessionHistoryLimits
    private(set) var logs: [String: SessionLog] = [:]
    private(set) var statistics = SessionHistoryStatistics()
    /// The words the packed events name by number.
    private(set) var words = TraceWords()

    init(limits: SessionHistoryLimits) {
        self.limits = limits
    }

    mutating func record(_ event: TraceEvent) {
        if logs[event.session] == nil, logs.count >= max(1, limits.sessions) {
            // Forget a tenth at once, so a simulation at the limit does not scan for every new session.
            forget(toSessions: max(0, limits.sessions - max(1, limits.sessions / 10)), keeping: event.session)
        }
        if logs[event.session] == nil {
            logs[event.session] = SessionLog(events: EventRing(capacity: max(1, limits.eventsPerSession)), lastActivity: event.atUnixNanos)
        }
        // Changed in place, in the table: a copy taken out and put back would copy the session's
        // whole ring on every event (its storage referenced twice at the append).
        let packed = PackedTraceEvent(event, words: &words)
        let dropped = logs[event.session]!.record(event, packed: packed)
        if dropped {
            statistics.droppedEvents += 1
        } else {
            statistics.events += 1
        }
        statistics.sessions = logs.count
        if statistics.events > limits.totalEvents {
            forget(toEvents: limits.totalEvents - limits.totalEvents / 10, keeping: event.session)
        }
    }

    func trace(session: String) -> SessionTrace? {
        guard let log = logs[session] else { return nil }
        // Broker and Clone events arrive from two threads: order them by the host's clock,
        // keeping arrival order (and so Clone sequence order) among equal times.
        let ordered = log.events.elements.map { $0.event(session: session, words: words) }.enumerated().sorted {
            ($0.element.atUnixNanos, $0.offset) < ($1.element.atUnixNanos, $1.offset)
        }.map(\.element)
        return SessionTrace(session: session, events: ordered, droppedEvents: log.dropped, closed: log.closedAt != nil, limits: limits)
    }

    func lastWorker(service: String, session: String?) -> (worker: String, atUnixNanos: Int64)? {
        var best: (worker: String, atUnixNanos: Int64)?
        let logs = session.map { id in self.logs[id].map { [$0] } ?? [] } ?? Array(self.logs.values)
        for log in logs {
            for packed in log.events.elements where packed.kind == .reply {
                let event = packed.event(session: "", words: words)
                guard event.service?.hasPrefix(service) == true else { continue }
                guard let worker = event.worker, event.atUnixNanos >= (best?.atUnixNanos ?? .min) else { continue }
                best = (worker, event.atUnixNanos)
            }
        }
        return best
    }

    func sessionIDs() -> [String] {
        logs.sorted { $0.value.lastActivity > $1.value.lastActivity }.map(\.key)
    }

    /// Sessions in the order they are forgotten: closed ones, longest closed first; then open
    /// ones, longest idle first.
    private func forgettingOrder(keeping kept: String) -> [String] {
        logs.filter { $0.key != kept }.sorted { left, right in
            switch (left.value.closedAt, right.value.closedAt) {
            case (let l?, let r?): return l < r
            case (.some, nil): return true
            case (nil, .some): return false
            case (nil, nil): return left.value.lastActivity < right.value.lastActivity
            }
        }.map(\.key)
    }

    private mutating func forget(toSessions target: Int, keeping kept: String) {
        for session in forgettingOrder(keeping: kept) where logs.count > target {
            forget(session)
        }
    }

    private mutating func forget(toEvents target: Int, keeping kept: String) {
        for session in forgettingOrder(keeping: kept) where statistics.events > target {
            forget(session)
        }
    }

    private mutating func forget(_ session: String) {
        guard let log = logs.removeValue(forKey: session) else { return }
        statistics.events -= log.events.count
        statistics.forgottenSessions += 1
        statistics.sessions = logs.count
    }
}

/// The newest `capacity` events, oldest first, in one byte array per session: each event's
/// length (a varint), then its bytes. An event is not a heap block of its own (some 50 bytes of
/// header and rounding each, as much as the event); the oldest is dropped by moving `start`, and
/// the bytes before it are let go once they are half the array.
struct EventRing {
    private var storage: [UInt8] = []
    private let limit: UInt32
    private var first: UInt32 = 0
    private var held: UInt32 = 0

    var capacity: Int { Int(limit) }
    /// Where the oldest event starts in `storage`.
    private var start: Int {
        get { Int(first) }
        set { first = UInt32(newValue) }
    }
    var count: Int { Int(held) }

    init(capacity: Int) {
        self.limit = UInt32(clamping: capacity)
    }

    /// Appends; true when the oldest event was dropped to make room.
    mutating func append(_ event: PackedTraceEvent) -> Bool {
        var dropped = false
        if count >= capacity {
            let (length, end) = Self.length(in: storage, at: start)
            start = end + length
            held -= 1
            dropped = true
            if start * 2 >= storage.count {
                storage.removeSubrange(0..<start)
                start = 0
            }
        }
        let needed = storage.count + event.bytes.count + 2
        if needed > storage.capacity {
            // Grow by an eighth, not double: most sessions hold a handful of events, and thousands
            // of them sit idle with whatever room is left over.
            storage.reserveCapacity(max(needed + 16, storage.count + storage.count / 8))
        }
        var length = UInt64(event.bytes.count)
        while length >= 0x80 {
            storage.append(UInt8(truncatingIfNeeded: length) | 0x80)
            length >>= 7
        }
        storage.append(UInt8(length))
        storage.append(contentsOf: event.bytes)
        held += 1
        return dropped
    }

    /// The bytes the ring holds room for (its array's capacity).
    var bytesHeld: Int { storage.capacity }

    var elements: [PackedTraceEvent] {
        var events: [PackedTraceEvent] = []
        events.reserveCapacity(count)
        var offset = start
        while offset < storage.count {
            let (length, end) = Self.length(in: storage, at: offset)
            events.append(PackedTraceEvent(bytes: Array(storage[end..<(end + length)])))
            offset = end + length
        }
        return events
    }

    /// The varint at `offset` and where the bytes after it start.
    private static func length(in storage: [UInt8], at offset: Int) -> (Int, Int) {
        var value = 0
        var shift = 0
        var index = offset
        while index < storage.count {
            let byte = storage[index]
            index += 1
            value |= Int(byte & 0x7F) << shift
            if byte & 0x80 == 0 { break }
            shift += 7
        }
        return (value, index)
    }
}
