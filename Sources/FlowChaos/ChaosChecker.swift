import FlowClient
import FlowHost
import MessagePath

/// What can go wrong in a run, as the checker counts it. The first eight fail a run; gaps and
/// resyncs are how clients recover from lost updates, counted to show the faults took effect.
public enum ChaosAnomaly: String, Codable, CodingKeyRepresentable, Sendable, CaseIterable, Comparable {
    /// An intent a client sent that was never answered nor refused (its client gave up).
    case lost
    /// One idempotency key applied twice: two applied answers with different outcomes.
    case appliedTwice
    /// A client got the answer to an intent after the answer to one it sent later.
    case outOfOrder
    /// A client showed a value older than one it had already shown for the same key.
    case staleShown
    /// A value written, or a call applied, for an older incarnation of a process after a newer
    /// one had written the key or called the same service (what fencing exists to refuse).
    case staleWrite
    /// A screen stayed `loading` longer than the bound (or to the end).
    case stuckLoading
    /// Clients of one session ended on different views.
    case notConverged
    /// The journey failed, or did not end on the screen it expected.
    case wrongFinalScreen
    /// A plugin was not running at the end.
    case notRestarted
    /// Gaps in a session's sequence chain a client noticed (it then took a snapshot again).
    case gap
    case resync

    public var failsTheRun: Bool { self != .gap && self != .resync }

    public static func < (lhs: ChaosAnomaly, rhs: ChaosAnomaly) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }

    /// What it means, for the report.
    public var meaning: String {
        switch self {
        case .lost: "intents sent and never answered nor refused"
        case .appliedTwice: "idempotency keys applied twice (two outcomes)"
        case .outOfOrder: "answers that came after the answer to a later intent"
        case .staleShown: "values shown older than one already shown"
        case .staleWrite: "writes or calls of an older incarnation applied after a newer one's"
        case .stuckLoading: "screens left loading past the bound"
        case .notConverged: "sessions whose clients ended on different views"
        case .wrongFinalScreen: "journeys that failed or ended on another screen"
        case .notRestarted: "plugins not running at the end"
        case .gap: "sequence gaps clients noticed (recovered by a snapshot)"
        case .resync: "snapshots clients took again"
        }
    }
}

/// The first anomaly of a session: when, what, and a line about it.
public struct ChaosAnomalyNote: Codable, Sendable, Equatable {
    public var anomaly: ChaosAnomaly
    public var atUnixNanos: Int64
    public var detail: String
}

/// What the checker found in one session.
public struct ChaosSessionFindings: Codable, Sendable, Equatable {
    public var session: String
    public var journey: String
    public var counts: [ChaosAnomaly: Int]
    /// The earliest anomaly that fails the run, if any.
    public var first: ChaosAnomalyNote?

    public var failed: Bool { counts.contains { $0.key.failsTheRun && $0.value > 0 } }
}

/// The checker's verdict on a run.
public struct ChaosFindings: Codable, Sendable, Equatable {
    public var counts: [ChaosAnomaly: Int]
    /// Sessions with at least one anomaly, worst first.
    public var sessions: [ChaosSessionFindings]
    public var sessionsChecked: Int
    public var eventsChecked: Int
    public var intents: Int
    public var applied: Int
    public var refused: Int
    public var faultsInjected: Int

    /// True when nothing that fails a run was found.
    public var passed: Bool { !counts.contains { $0.key.failsTheRun && $0.value > 0 } }
}

/// Checks a run (Jepsen's checkers, for flows): from each client's own log and the host's
/// history of each session, counts what was lost, applied twice, answered out of order or
/// shown stale, how long screens stayed loading, whether a session's clients converged and its
/// journey ended where it should, and whether every plugin runs at the end. One pass over each
/// log, with a dictionary per key: linear in the events.
public struct ChaosChecker: Sendable {
    /// How long a screen may stay `loading` (a kill and restart takes about a second; a client
    /// retries for 31 s in all).
    public var loadingBound: Duration

    public init(loadingBound: Duration = .seconds(15)) {
        self.loadingBound = loadingBound
    }

    public func check(_ run: ChaosRun) -> ChaosFindings {
        var findings = ChaosFindings(
            counts: [:], sessions: [], sessionsChecked: run.sessions.count, eventsChecked: 0, intents: 0, applied: 0, refused: 0,
            faultsInjected: run.decisions.count)
        for record in run.sessions {
            var session = SessionCheck(record: record, loadingBound: Int64(loadingBound.components.seconds) * 1_000_000_000,
                                       endedAt: run.endedAtUnixNanos)
            session.run()
            findings.eventsChecked += session.events
            findings.intents += session.intents
            findings.applied += session.applied
            findings.refused += session.refused
            for (anomaly, count) in session.counts where count > 0 { findings.counts[anomaly, default: 0] += count }
            if !session.counts.isEmpty {
                findings.sessions.append(ChaosSessionFindings(
                    session: record.session, journey: record.journey, counts: session.counts, first: session.first))
            }
        }
        let stopped = run.processes.filter { !$0.running }
        if !stopped.isEmpty { findings.counts[.notRestarted] = stopped.count }
        findings.sessions.sort { lhs, rhs in
            (lhs.failed ? 1 : 0, lhs.counts.values.reduce(0, +)) > (rhs.failed ? 1 : 0, rhs.counts.values.reduce(0, +))
        }
        return findings
    }
}

/// The checks of one session.
private struct SessionCheck {
    let record: ChaosSessionRecord
    let loadingBound: Int64
    let endedAt: Int64
    var counts: [ChaosAnomaly: Int] = [:]
    var first: ChaosAnomalyNote?
    var events = 0
    var intents = 0
    var applied = 0
    var refused = 0

    init(record: ChaosSessionRecord, loadingBound: Int64, endedAt: Int64) {
        self.record = record
        self.loadingBound = loadingBound
        self.endedAt = endedAt
    }

    mutating func note(_ anomaly: ChaosAnomaly, at: Int64, _ detail: @autoclosure () -> String, count: Int = 1) {
        counts[anomaly, default: 0] += count
        guard anomaly.failsTheRun, first == nil || at < first!.atUnixNanos else { return }
        first = ChaosAnomalyNote(anomaly: anomaly, atUnixNanos: at, detail: detail())
    }

    mutating func run() {
        for client in record.clients { check(client) }
        if let trace = record.trace { check(trace) }
        checkConvergence()
        let record = self.record
        let end = record.clients.first?.events.last?.atUnixNanos ?? endedAt
        if !record.passed {
            let why = "the journey \(record.journey) failed: \(record.failure ?? "no reason given")"
            note(.wrongFinalScreen, at: end, why)
        } else if let expected = record.expectedScreen, let final = record.finalScreen, expected != final {
            let why = "the journey \(record.journey) ended on \(final), not \(expected)"
            note(.wrongFinalScreen, at: end, why)
        }
    }

    /// One client's log: lost and out-of-order answers, stale values, stuck loading.
    mutating func check(_ client: ClientRecord) {
        events += client.events.count
        if client.gaps > 0 { counts[.gap, default: 0] += client.gaps }
        if client.resyncs > 0 { counts[.resync, default: 0] += client.resyncs }
        var sent: [String: (order: Int, event: ClientEvent)] = [:]
        var answered: Set<String> = []
        var latestAnsweredOrder = -1
        var newest: [String: UInt64] = [:]
        var loadingSince: [String: Int64] = [:]
        for event in client.events {
            switch event.kind {
            case .intent:
                guard let key = event.idempotencyKey, sent[key] == nil else { continue }
                sent[key] = (sent.count, event)
                intents += 1
            case .reply:
                guard let key = event.idempotencyKey, let request = sent[key], !answered.contains(key) else { continue }
                if event.error?.hasPrefix(SessionEventText.unanswered) == true {
                    // The client gave up: the outcome is unknown. A later try with the same key may still be answered.
                    continue
                }
                answered.insert(key)
                if event.applied == true { applied += 1 } else { refused += 1 }
                if request.order < latestAnsweredOrder {
                    note(.outOfOrder, at: event.atUnixNanos, "\(client.name): the answer to \(request.event.action ?? "?") came after the answer to a later intent")
                }
                latestAnsweredOrder = max(latestAnsweredOrder, request.order)
            case .navigation, .state:
                if let seen = newest[event.key], event.version < seen {
                    note(.staleShown, at: event.atUnixNanos, "\(client.name) showed \(event.key) v\(event.version) after v\(seen)")
                } else {
                    newest[event.key] = event.version
                }
                guard event.kind == .state else { continue }
                if event.phase == "loading" {
                    if loadingSince[event.key] == nil { loadingSince[event.key] = event.atUnixNanos }
                } else if let since = loadingSince.removeValue(forKey: event.key), event.atUnixNanos - since > loadingBound {
                    note(.stuckLoading, at: since, "\(client.name): \(event.key) was loading for \((event.atUnixNanos - since) / 1_000_000) ms")
                }
            case .deleted:
                newest[event.key] = nil
                loadingSince[event.key] = nil
            case .fenced:
                break
            }
        }
        let end = client.events.last?.atUnixNanos ?? endedAt
        for (key, since) in loadingSince where end - since > loadingBound {
            note(.stuckLoading, at: since, "\(client.name): \(key) was still loading at the end, \((end - since) / 1_000_000) ms after it began")
        }
        for (key, request) in sent where !answered.contains(key) {
            note(.lost, at: request.event.atUnixNanos, "\(client.name): \(request.event.action ?? "?") to \(request.event.key) (key \(key)) was never answered")
        }
    }

    /// The host's history: keys applied twice, values and calls from an older incarnation.
    mutating func check(_ trace: SessionTrace) {
        events += trace.events.count
        var outcomes: [String: (version: UInt64?, at: Int64)] = [:]
        var incarnations: [String: [String: UInt64]] = [:]
        var callers: [String: UInt64] = [:]
        var staleCalls: [String: (caller: String, incarnation: UInt64, newest: UInt64)] = [:]
        // Per caller and service: the newest incarnation whose request the receiver answered.
        var answeredNewest: [String: UInt64] = [:]
        for event in trace.events {
            switch event.kind {
            case .intent, .call:
                // Fencing is each receiver's: per caller and service, as a receiver keeps it.
                guard let incarnation = event.incarnation, incarnation > 0 else { continue }
                let caller = event.from.split(separator: "/").first.map(String.init) ?? event.from
                let fence = caller + "\u{0}" + (event.service ?? "")
                if let newest = callers[fence], incarnation < newest {
                    if let key = event.idempotencyKey { staleCalls[key] = (caller, incarnation, newest) }
                } else {
                    callers[fence] = incarnation
                }
            case .reply:
                guard let key = event.idempotencyKey, !key.isEmpty else { continue }
                if let asked = event.askedBy, asked > 0 {
                    // Which request this answers is known: stale only if the receiver applied it
                    // after it had answered a newer incarnation of the same caller (before that,
                    // it could not know the caller was replaced: a receiver fences what it has seen).
                    staleCalls[key] = nil
                    let caller = (event.to ?? "").split(separator: "/").first.map(String.init) ?? ""
                    let fence = caller + "\u{0}" + (event.service ?? "")
                    let newest = answeredNewest[fence] ?? 0
                    if event.applied == true, asked < newest {
                        note(.staleWrite, at: event.atUnixNanos,
                             "\(event.action ?? "?") from \(caller) incarnation \(asked) was applied after \(event.service ?? "the same service") had answered incarnation \(newest)")
                    }
                    answeredNewest[fence] = max(newest, asked)
                }
                guard event.applied == true else { continue }
                if let stale = staleCalls.removeValue(forKey: key) {
                    note(.staleWrite, at: event.atUnixNanos,
                         "\(event.action ?? "?") from \(stale.caller) incarnation \(stale.incarnation) was applied after incarnation \(stale.newest) had called \(event.service ?? "the same service")")
                }
                let id = (event.service ?? "") + "\u{0}" + key
                if let earlier = outcomes[id] {
                    if earlier.version != event.version {
                        note(.appliedTwice, at: event.atUnixNanos,
                             "\(event.action ?? "?") (key \(key)) was applied twice: at v\(earlier.version.map(String.init) ?? "-") and at v\(event.version.map(String.init) ?? "-")")
                    }
                } else {
                    outcomes[id] = (event.version, event.atUnixNanos)
                }
            case .navigation, .state, .record, .value:
                guard let key = event.key, let incarnation = event.incarnation, incarnation > 0 else { continue }
                let writer = event.from.split(separator: "/").first.map(String.init) ?? event.from
                if let newest = incarnations[key]?[writer], incarnation < newest {
                    note(.staleWrite, at: event.atUnixNanos, "\(key) was written by \(writer) incarnation \(incarnation) after incarnation \(newest)")
                } else {
                    incarnations[key, default: [:]][writer] = incarnation
                }
            default:
                break
            }
        }
    }

    /// Clients of one session must end on the same view.
    mutating func checkConvergence() {
        guard let reference = record.clients.first, record.clients.count > 1 else { return }
        for other in record.clients.dropFirst()
        where other.finalNavigation != reference.finalNavigation || other.finalScreen != reference.finalScreen || other.finalStates != reference.finalStates {
            note(.notConverged, at: other.events.last?.atUnixNanos ?? endedAt,
                 "\(other.name) ended on \(other.finalScreen) nav v\(other.finalNavigation), \(reference.name) on \(reference.finalScreen) nav v\(reference.finalNavigation)")
        }
    }
}
