import FlowClient
import FlowHost
import Foundation
import MessagePath

/// One entry of a client's own log, as the checker reads it: what the client saw (values with
/// their sequence and version) and what it sent and was answered. Compact, so a run of a million
/// events loads and checks in seconds.
public struct ClientEvent: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable {
        case navigation, state, deleted, fenced, intent, reply
    }

    public var kind: Kind
    /// The Clone key of a value; the service of an intent or reply.
    public var key: String
    public var sequence: UInt64
    /// Navigation.version, ViewState.screen_version, or the version an intent was made on.
    public var version: UInt64
    /// The top screen of a navigation, the screen of a state.
    public var screen: String?
    /// A state's phase (`loading`, `success`…).
    public var phase: String?
    public var action: String?
    public var idempotencyKey: String?
    public var applied: Bool?
    public var error: String?
    public var atUnixNanos: Int64

    public init(kind: Kind, key: String, sequence: UInt64 = 0, version: UInt64 = 0, atUnixNanos: Int64) {
        self.kind = kind
        self.key = key
        self.sequence = sequence
        self.version = version
        self.atUnixNanos = atUnixNanos
    }

    /// The checker's view of a client's `SessionEvent`; nil for what it does not check (records,
    /// coordinators' liveness).
    public init?(_ event: SessionEvent) {
        let at = Int64(event.at.timeIntervalSince1970 * 1e9)
        switch event.kind {
        case .navigation(let version, let top, _, _, _):
            self.init(kind: .navigation, key: event.key, sequence: event.sequence, version: version, atUnixNanos: at)
            screen = top
        case .state(let screen, let phase, let version, _, _):
            self.init(kind: .state, key: event.key, sequence: event.sequence, version: version, atUnixNanos: at)
            self.screen = screen
            self.phase = phase.rawValue
        case .deleted(let key):
            self.init(kind: .deleted, key: key, sequence: event.sequence, atUnixNanos: at)
        case .fenced(let key, _):
            self.init(kind: .fenced, key: key, sequence: event.sequence, atUnixNanos: at)
        case .intent(let action, let service, let version, let idempotencyKey):
            self.init(kind: .intent, key: service, version: version, atUnixNanos: at)
            self.action = action
            self.idempotencyKey = idempotencyKey
        case .reply(let action, let service, let applied, let error, let idempotencyKey):
            self.init(kind: .reply, key: service, atUnixNanos: at)
            self.action = action
            self.applied = applied
            self.error = error.isEmpty ? nil : error
            self.idempotencyKey = idempotencyKey
        case .record, .coordinator:
            return nil
        }
    }
}

/// One client of a session: its name, its log, and what its Clone agent counted.
public struct ClientRecord: Codable, Sendable, Equatable {
    public var name: String
    public var events: [ClientEvent]
    /// Gaps in the session's sequence chain the agent noticed, and snapshots it took again.
    public var gaps: Int
    public var resyncs: Int
    /// What the client showed at the end: the navigation's version and top, each screen's state version.
    public var finalNavigation: UInt64
    public var finalScreen: String
    public var finalStates: [String: UInt64]

    public init(name: String, events: [ClientEvent], gaps: Int = 0, resyncs: Int = 0, finalNavigation: UInt64 = 0,
                finalScreen: String = "", finalStates: [String: UInt64] = [:]) {
        self.name = name
        self.events = events
        self.gaps = gaps
        self.resyncs = resyncs
        self.finalNavigation = finalNavigation
        self.finalScreen = finalScreen
        self.finalStates = finalStates
    }
}

/// One session of a chaos run: the journey played on it, how it ended, its clients' logs and
/// the host's history of it.
public struct ChaosSessionRecord: Codable, Sendable, Equatable {
    public var session: String
    public var journey: String
    public var passed: Bool
    public var failure: String?
    /// The screen the journey expected last, and the one its driver ended on.
    public var expectedScreen: String?
    public var finalScreen: String?
    public var clients: [ClientRecord]
    public var trace: SessionTrace?

    public init(session: String, journey: String, passed: Bool, failure: String? = nil, expectedScreen: String? = nil,
                finalScreen: String? = nil, clients: [ClientRecord], trace: SessionTrace? = nil) {
        self.session = session
        self.journey = journey
        self.passed = passed
        self.failure = failure
        self.expectedScreen = expectedScreen
        self.finalScreen = finalScreen
        self.clients = clients
        self.trace = trace
    }
}

/// A plugin at the end of a run, for "processes not restarted".
public struct ChaosProcess: Codable, Sendable, Equatable {
    public var name: String
    public var replica: Int
    public var running: Bool
    public var restarts: Int

    public init(name: String, replica: Int, running: Bool, restarts: Int) {
        self.name = name
        self.replica = replica
        self.running = running
        self.restarts = restarts
    }
}

/// Everything a chaos run leaves for the checker: `flowbus chaos check DIR` reads it again.
public struct ChaosRun: Codable, Sendable, Equatable {
    public var plan: FaultPlan
    public var decisions: [FaultDecision]
    public var sessions: [ChaosSessionRecord]
    public var processes: [ChaosProcess]
    public var startedAtUnixNanos: Int64
    public var endedAtUnixNanos: Int64

    public init(plan: FaultPlan, decisions: [FaultDecision], sessions: [ChaosSessionRecord], processes: [ChaosProcess],
                startedAtUnixNanos: Int64, endedAtUnixNanos: Int64) {
        self.plan = plan
        self.decisions = decisions
        self.sessions = sessions
        self.processes = processes
        self.startedAtUnixNanos = startedAtUnixNanos
        self.endedAtUnixNanos = endedAtUnixNanos
    }
}
