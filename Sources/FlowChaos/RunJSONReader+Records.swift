import FlowHost

// The records of run.json's sessions, each read by `RunJSONReader` member by member.

extension ChaosSessionRecord {
    /// The session whose JSON is exactly `range` of `bytes`, read by `RunJSONReader` alone (no
    /// `JSONDecoder` behind it): nothing but white space may follow it.
    init(readingAll range: Range<Int>, of bytes: UnsafeBufferPointer<UInt8>) throws(RunJSONReader.Unexpected) {
        var reader = RunJSONReader(bytes, range)
        try self.init(reading: &reader)
        guard reader.atEnd else { throw reader.unexpected("text after a session") }
    }

    /// The member names `init(reading:)` reads: every stored property (checked by the tests
    /// against the type's own, so a new property cannot be read past).
    enum Member: Int, RunJSONMembers {
        case session, journey, passed, failure, expectedScreen, finalScreen, clients, trace
        static let names = namesOfCases()
    }

    static var readerMembers: Set<String> { Set(Member.names) }

    init(reading reader: inout RunJSONReader) throws(RunJSONReader.Unexpected) {
        var session: String?, journey: String?, passed: Bool?, clients: [ClientRecord]?
        var failure: String?, expectedScreen: String?, finalScreen: String?, trace: SessionTrace?
        try reader.object(Member.self) { reader, member throws(RunJSONReader.Unexpected) in
            switch member {
            case .session?: session = try reader.string()
            case .journey?: journey = try reader.string()
            case .passed?: passed = try reader.bool()
            case .failure?: failure = try reader.optionalString()
            case .expectedScreen?: expectedScreen = try reader.optionalString()
            case .finalScreen?: finalScreen = try reader.optionalString()
            case .clients?:
                var records: [ClientRecord] = []
                try reader.array { reader throws(RunJSONReader.Unexpected) in records.append(try ClientRecord(reading: &reader)) }
                clients = records
            case .trace?: trace = try reader.null() ? nil : try SessionTrace(reading: &reader)
            case nil: try reader.skipValue()
            }
        }
        guard let session else { throw reader.missing("session", in: "a session") }
        guard let journey else { throw reader.missing("journey", in: "a session") }
        guard let passed else { throw reader.missing("passed", in: "a session") }
        guard let clients else { throw reader.missing("clients", in: "a session") }
        self.init(session: session, journey: journey, passed: passed, failure: failure, expectedScreen: expectedScreen,
                  finalScreen: finalScreen, clients: clients, trace: trace)
    }
}

extension ClientRecord {
    enum Member: Int, RunJSONMembers {
        case name, events, gaps, resyncs, finalNavigation, finalScreen, finalStates
        static let names = namesOfCases()
    }

    static var readerMembers: Set<String> { Set(Member.names) }

    init(reading reader: inout RunJSONReader) throws(RunJSONReader.Unexpected) {
        var name: String?, events: [ClientEvent]?, gaps: Int?, resyncs: Int?
        var finalNavigation: UInt64?, finalScreen: String?, finalStates: [String: UInt64]?
        try reader.object(Member.self) { reader, member throws(RunJSONReader.Unexpected) in
            switch member {
            case .name?: name = try reader.string()
            case .events?:
                var list: [ClientEvent] = []
                try reader.array { reader throws(RunJSONReader.Unexpected) in list.append(try ClientEvent(reading: &reader)) }
                events = list
            case .gaps?: gaps = try reader.int()
            case .resyncs?: resyncs = try reader.int()
            case .finalNavigation?: finalNavigation = try reader.uint64()
            case .finalScreen?: finalScreen = try reader.string()
            case .finalStates?:
                var states: [String: UInt64] = [:]
                try reader.object { reader, key throws(RunJSONReader.Unexpected) in
                    // A key written twice: the first counts, as with `JSONDecoder`.
                    let value = try reader.uint64()
                    if states[key] == nil { states[key] = value }
                }
                finalStates = states
            case nil: try reader.skipValue()
            }
        }
        guard let name else { throw reader.missing("name", in: "a client") }
        guard let events else { throw reader.missing("events", in: "a client") }
        guard let gaps else { throw reader.missing("gaps", in: "a client") }
        guard let resyncs else { throw reader.missing("resyncs", in: "a client") }
        guard let finalNavigation else { throw reader.missing("finalNavigation", in: "a client") }
        guard let finalScreen else { throw reader.missing("finalScreen", in: "a client") }
        guard let finalStates else { throw reader.missing("finalStates", in: "a client") }
        self.init(name: name, events: events, gaps: gaps, resyncs: resyncs, finalNavigation: finalNavigation,
                  finalScreen: finalScreen, finalStates: finalStates)
    }
}

extension ClientEvent {
    enum Member: Int, RunJSONMembers {
        case kind, key, sequence, version, screen, phase, action, idempotencyKey, applied, error, atUnixNanos
        static let names = namesOfCases()
    }

    static var readerMembers: Set<String> { Set(Member.names) }

    init(reading reader: inout RunJSONReader) throws(RunJSONReader.Unexpected) {
        var kind: Kind?, key: String?, sequence: UInt64?, version: UInt64?, at: Int64?
        var screen: String?, phase: String?, action: String?, idempotencyKey: String?, applied: Bool?, error: String?
        try reader.object(Member.self) { reader, member throws(RunJSONReader.Unexpected) in
            switch member {
            case .kind?:
                let text = try reader.string()
                guard let known = Kind(rawValue: text) else { throw reader.unexpected("an unknown client event kind '\(text)'") }
                kind = known
            case .key?: key = try reader.string()
            case .sequence?: sequence = try reader.uint64()
            case .version?: version = try reader.uint64()
            case .atUnixNanos?: at = try reader.int64()
            case .screen?: screen = try reader.optionalString()
            case .phase?: phase = try reader.optionalString()
            case .action?: action = try reader.optionalString()
            case .idempotencyKey?: idempotencyKey = try reader.optionalString()
            case .applied?: applied = try reader.optionalBool()
            case .error?: error = try reader.optionalString()
            case nil: try reader.skipValue()
            }
        }
        guard let kind else { throw reader.missing("kind", in: "a client event") }
        guard let key else { throw reader.missing("key", in: "a client event") }
        guard let sequence else { throw reader.missing("sequence", in: "a client event") }
        guard let version else { throw reader.missing("version", in: "a client event") }
        guard let at else { throw reader.missing("atUnixNanos", in: "a client event") }
        self.init(kind: kind, key: key, sequence: sequence, version: version, atUnixNanos: at)
        self.screen = screen
        self.phase = phase
        self.action = action
        self.idempotencyKey = idempotencyKey
        self.applied = applied
        self.error = error
    }
}

extension SessionTrace {
    enum Member: Int, RunJSONMembers {
        case session, events, droppedEvents, closed, limits, lostObservations
        static let names = namesOfCases()
    }

    static var readerMembers: Set<String> { Set(Member.names) }

    init(reading reader: inout RunJSONReader) throws(RunJSONReader.Unexpected) {
        var session: String?, events: [TraceEvent]?, droppedEvents: Int?, closed: Bool?, limits: SessionHistoryLimits?, lost: Int?
        try reader.object(Member.self) { reader, member throws(RunJSONReader.Unexpected) in
            switch member {
            case .session?: session = try reader.string()
            case .events?:
                var list: [TraceEvent] = []
                try reader.array { reader throws(RunJSONReader.Unexpected) in list.append(try TraceEvent(reading: &reader)) }
                events = list
            case .droppedEvents?: droppedEvents = try reader.int()
            case .closed?: closed = try reader.bool()
            case .limits?: limits = try SessionHistoryLimits(reading: &reader)
            case .lostObservations?: lost = try reader.int()
            case nil: try reader.skipValue()
            }
        }
        guard let session else { throw reader.missing("session", in: "a session's trace") }
        guard let events else { throw reader.missing("events", in: "a session's trace") }
        guard let droppedEvents else { throw reader.missing("droppedEvents", in: "a session's trace") }
        guard let closed else { throw reader.missing("closed", in: "a session's trace") }
        guard let limits else { throw reader.missing("limits", in: "a session's trace") }
        guard let lost else { throw reader.missing("lostObservations", in: "a session's trace") }
        self.init(session: session, events: events, droppedEvents: droppedEvents, closed: closed, limits: limits, lostObservations: lost)
    }
}

extension SessionHistoryLimits {
    enum Member: Int, RunJSONMembers {
        case eventsPerSession, sessions, totalEvents, pendingRequests, queuedObservations
        static let names = namesOfCases()
    }

    static var readerMembers: Set<String> { Set(Member.names) }

    init(reading reader: inout RunJSONReader) throws(RunJSONReader.Unexpected) {
        var values: [Int?] = [nil, nil, nil, nil, nil]
        try reader.object(Member.self) { reader, member throws(RunJSONReader.Unexpected) in
            switch member {
            case .eventsPerSession?: values[0] = try reader.int()
            case .sessions?: values[1] = try reader.int()
            case .totalEvents?: values[2] = try reader.int()
            case .pendingRequests?: values[3] = try reader.int()
            case .queuedObservations?: values[4] = try reader.int()
            case nil: try reader.skipValue()
            }
        }
        guard let events = values[0], let sessions = values[1], let total = values[2], let pending = values[3], let queued = values[4] else {
            throw reader.unexpected("a session's history limits without one of \(Self.readerMembers.sorted())")
        }
        self.init()
        eventsPerSession = events
        self.sessions = sessions
        totalEvents = total
        pendingRequests = pending
        queuedObservations = queued
    }
}

extension TraceEvent {
    enum Member: Int, RunJSONMembers {
        case kind, session, atUnixNanos, sequence, from, to, service, worker, key, action, screen, version, idempotencyKey, incarnation, askedBy, applied, error, phase, message, top, stack, tab, modal, user, flow, open
        static let names = namesOfCases()
    }

    static var readerMembers: Set<String> { Set(Member.names) }

    init(reading reader: inout RunJSONReader) throws(RunJSONReader.Unexpected) {
        var kind: Kind?, session: String?, at: Int64?, from: String?
        var event = TraceEvent(kind: .value, session: "", atUnixNanos: 0, from: "")
        try reader.object(Member.self) { reader, member throws(RunJSONReader.Unexpected) in
            switch member {
            case .kind?:
                let text = try reader.string()
                guard let known = Kind(rawValue: text) else { throw reader.unexpected("an unknown trace event kind '\(text)'") }
                kind = known
            case .session?: session = try reader.string()
            case .atUnixNanos?: at = try reader.int64()
            case .from?: from = try reader.string()
            case .sequence?: event.sequence = try reader.optionalUInt64()
            case .to?: event.to = try reader.optionalString()
            case .service?: event.service = try reader.optionalString()
            case .worker?: event.worker = try reader.optionalString()
            case .key?: event.key = try reader.optionalString()
            case .action?: event.action = try reader.optionalString()
            case .screen?: event.screen = try reader.optionalString()
            case .version?: event.version = try reader.optionalUInt64()
            case .idempotencyKey?: event.idempotencyKey = try reader.optionalString()
            case .incarnation?: event.incarnation = try reader.optionalUInt64()
            case .askedBy?: event.askedBy = try reader.optionalUInt64()
            case .applied?: event.applied = try reader.optionalBool()
            case .error?: event.error = try reader.optionalString()
            case .phase?: event.phase = try reader.optionalString()
            case .message?: event.message = try reader.optionalString()
            case .top?: event.top = try reader.optionalString()
            case .stack?:
                if try reader.null() {
                    event.stack = nil
                } else {
                    var stack: [String] = []
                    try reader.array { reader throws(RunJSONReader.Unexpected) in stack.append(try reader.string()) }
                    event.stack = stack
                }
            case .tab?: event.tab = try reader.optionalString()
            case .modal?: event.modal = try reader.optionalString()
            case .user?: event.user = try reader.optionalString()
            case .flow?: event.flow = try reader.optionalString()
            case .open?: event.open = try reader.optionalBool()
            case nil: try reader.skipValue()
            }
        }
        guard let kind else { throw reader.missing("kind", in: "a trace event") }
        guard let session else { throw reader.missing("session", in: "a trace event") }
        guard let at else { throw reader.missing("atUnixNanos", in: "a trace event") }
        guard let from else { throw reader.missing("from", in: "a trace event") }
        event.kind = kind
        event.session = session
        event.atUnixNanos = at
        event.from = from
        self = event
    }
}
