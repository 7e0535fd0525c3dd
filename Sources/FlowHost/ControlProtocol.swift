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
        /// The recorded history of one session (`session`).
        case trace
    }

    public var command: Command
    public var rule: FaultRule?
    public var ruleID: String?
    public var session: String?

    public init(command: Command, rule: FaultRule? = nil, ruleID: String? = nil, session: String? = nil) {
        self.command = command
        self.rule = rule
        self.ruleID = ruleID
        self.session = session
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
