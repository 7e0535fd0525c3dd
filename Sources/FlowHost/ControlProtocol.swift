import Foundation
import MessagePath

/// A request on the host's control socket (`<run-dir>/control.ipc`): one JSON frame.
public struct ControlRequest: Codable, Sendable, Equatable {
    public enum Command: String, Codable, Sendable {
        case ping
        case status
        case down
        case faultSet = "fault.set"
        case faultClear = "fault.clear"
        case faultList = "fault.list"
        /// The faults injected so far (`after`: only those past the first N).
        case faultDecisions = "fault.decisions"
        /// Clears every rule and starts the decisions again from `seed`.
        case faultReset = "fault.reset"
        /// Plays `plan` from now (ending any plan already playing; with `beside`, next to it).
        case faultPlan = "fault.plan"
        /// The recorded history of one session (`session`).
        case trace
        /// How many clients follow each session, by session id (`[String: Int]`).
        case sessionClients = "session.clients"
    }

    public var command: Command
    public var rule: FaultRule?
    public var ruleID: String?
    public var session: String?
    public var after: Int?
    public var seed: UInt64?
    public var plan: FaultPlan?
    /// For `fault.plan`: play it beside the plan playing, leaving that one alone (one fault asked
    /// for by hand); a process it aims at by session is found now, or the request fails.
    public var beside: Bool?

    public init(
        command: Command, rule: FaultRule? = nil, ruleID: String? = nil, session: String? = nil, after: Int? = nil, seed: UInt64? = nil,
        plan: FaultPlan? = nil, beside: Bool? = nil
    ) {
        self.plan = plan
        self.beside = beside
        self.command = command
        self.rule = rule
        self.ruleID = ruleID
        self.session = session
        self.after = after
        self.seed = seed
    }
}

/// The answer to `fault.decisions`: the seed, how many faults were injected in all, and those asked for.
public struct FaultDecisionLog: Codable, Sendable, Equatable {
    public var seed: UInt64
    public var total: Int
    public var decisions: [FaultDecision]
    /// The plan playing or last played, and whether it ended.
    public var plan: String?
    public var planFinished: Bool?

    public init(seed: UInt64, total: Int, decisions: [FaultDecision], plan: String? = nil, planFinished: Bool? = nil) {
        self.seed = seed
        self.total = total
        self.decisions = decisions
        self.plan = plan
        self.planFinished = planFinished
    }
}

/// The answer: `ok` and either a JSON body for the command or an error a person can act on.
public struct ControlReply<Body: Codable & Sendable>: Codable, Sendable {
    public var ok: Bool
    public var error: String?
    public var body: Body?

    public init(ok: Bool, error: String? = nil, body: Body? = nil) {
        self.ok = ok
        self.error = error
        self.body = body
    }
}

/// The body of replies that carry nothing but their `ok`.
public struct Empty: Codable, Sendable, Equatable {
    public init() {}
}
