import Foundation
import Yams

/// One step of a drive script.
public enum DriveStep: Sendable, Equatable {
    /// Opens a new session (or attaches to `session` when given).
    case open(session: String?)
    /// Attaches to an existing session; `observe` follows it without announcing to coord.app.
    case attach(session: String, observe: Bool)
    /// Waits until the session looks like this.
    case expect(Expectation)
    /// Sends an action on the top screen. `screen`: first wait for that top screen.
    /// `refused`: the intent must be refused (with that error code name when not empty).
    case send(action: String, fields: [String: String], screen: String?, refused: String?)
    /// Calls an MDP service with a `ServiceCall` (e.g. `svc.mail` `outbox`), repeating until its
    /// result has every key of `save`; saves each as a variable (`save`: variable → result key).
    case call(service: String, method: String, args: [String: String], save: [String: String])
    /// Pauses.
    case wait(Duration)
    /// Closes the session (`coord.app` closeSession).
    case close
    /// Types keys into the terminal client (`flowbus client --script`), in key notation.
    case keys(String)
    /// Waits until the client's screen shows `text` (or, with `absent`, no longer shows it).
    case see(text: String, absent: Bool)

    public var name: String {
        switch self {
        case .keys: "keys"
        case .see: "see"
        case .open: "open"
        case .attach: "attach"
        case .expect: "expect"
        case .send: "send"
        case .call: "call"
        case .wait: "wait"
        case .close: "close"
        }
    }
}

/// A step with where it came from and how long it may wait.
public struct ScriptStep: Sendable, Equatable {
    public var number: Int
    /// The line in the script (1-based), 0 when built in Swift.
    public var line: Int
    public var step: DriveStep
    public var timeout: Duration?

    public init(number: Int, line: Int = 0, step: DriveStep, timeout: Duration? = nil) {
        self.number = number
        self.line = line
        self.step = step
        self.timeout = timeout
    }

    public var label: String { "step \(number)" + (line > 0 ? " (line \(line), \(step.name))" : " (\(step.name))") }
}

/// A script that is not a valid drive script: which step, and what is wrong with it.
public struct DriveScriptError: Error, Sendable, Equatable, CustomStringConvertible {
    public var script: String
    public var step: Int?
    public var line: Int?
    public var problem: String

    public var description: String {
        var location = script
        if let step { location += ", step \(step)" }
        if let line { location += " (line \(line))" }
        return "\(location): \(problem)"
    }
}

/// A YAML list of steps (see `flowbus drive --help`), parsed once, run by `Journey`.
public struct DriveScript: Sendable, Equatable {
    public var name: String
    public var steps: [ScriptStep]

    public init(name: String, steps: [ScriptStep]) {
        self.name = name
        self.steps = steps
    }

    public static func load(path: String) throws(DriveScriptError) -> DriveScript {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw DriveScriptError(script: path, problem: "cannot read the file; check the path")
        }
        return try parse(String(decoding: data, as: UTF8.self), name: path)
    }

    public static func parse(_ yaml: String, name: String = "script") throws(DriveScriptError) -> DriveScript {
        let root: Node?
        do {
            root = try Yams.compose(yaml: yaml)
        } catch {
            throw DriveScriptError(script: name, problem: "not valid YAML: \(error)")
        }
        guard let root, let sequence = root.sequence else {
            throw DriveScriptError(script: name, line: root?.mark?.line,
                                   problem: "a drive script is a YAML list of steps, e.g. `- open: {}` then `- expect: {screen: cart}`")
        }
        var steps: [ScriptStep] = []
        for (offset, node) in sequence.enumerated() {
            let parser = StepParser(script: name, number: offset + 1, node: node)
            steps.append(try parser.parse())
        }
        guard !steps.isEmpty else { throw DriveScriptError(script: name, problem: "the script has no steps") }
        return DriveScript(name: name, steps: steps)
    }
}

/// Parses one step node, every error naming the step.
struct StepParser {
    static let kinds = ["open", "attach", "expect", "send", "call", "wait", "close", "keys", "see"]
    static let expectKeys = ["screen", "tab", "stack", "modal", "phase", "message", "notice", "state", "user", "coordinators", "data", "timeout"]
    static let sendKeys = ["action", "fields", "screen", "refused", "timeout"]

    let script: String
    let number: Int
    let node: Node

    func fail(_ problem: String, at node: Node? = nil) -> DriveScriptError {
        DriveScriptError(script: script, step: number, line: (node ?? self.node).mark?.line, problem: problem)
    }

    func parse() throws(DriveScriptError) -> ScriptStep {
        if let word = node.scalar?.string, word == "close" {
            return ScriptStep(number: number, line: node.mark?.line ?? 0, step: .close)
        }
        guard let mapping = node.mapping, mapping.count == 1, let (keyNode, body) = mapping.first, let kind = keyNode.string else {
            throw fail("a step is one key naming what to do (\(Self.kinds.joined(separator: ", "))), e.g. `- expect: {screen: cart}`")
        }
        let line = node.mark?.line ?? 0
        switch kind {
        case "open":
            let fields = try options(body, allowed: ["session"], kind: kind)
            return ScriptStep(number: number, line: line, step: .open(session: try text(fields["session"], "session")))
        case "attach":
            if let session = body.scalar?.string, body.mapping == nil, !session.isEmpty {
                return ScriptStep(number: number, line: line, step: .attach(session: session, observe: false))
            }
            let fields = try options(body, allowed: ["session", "observe"], kind: kind)
            guard let session = try text(fields["session"], "session"), !session.isEmpty else {
                throw fail("attach needs the session id: `- attach: SESSION` or `- attach: {session: SESSION, observe: true}`", at: body)
            }
            return ScriptStep(number: number, line: line, step: .attach(session: session, observe: try flag(fields["observe"], "observe") ?? false))
        case "expect":
            let fields = try options(body, allowed: Self.expectKeys, kind: kind)
            guard fields.keys.contains(where: { $0 != "timeout" }) else {
                throw fail("expect names at least one of \(Self.expectKeys.dropLast().joined(separator: ", "))", at: body)
            }
            var expectation = Expectation()
            expectation.screen = try text(fields["screen"], "screen")
            expectation.tab = try text(fields["tab"], "tab")
            expectation.stack = try list(fields["stack"], "stack")
            expectation.modal = try text(fields["modal"], "modal")
            if let phase = try text(fields["phase"], "phase") {
                guard let value = ScreenPhase(rawValue: phase) else {
                    throw fail("phase \"\(phase)\" is not a phase; use one of \(ScreenPhase.allCases.map(\.rawValue).joined(separator: ", "))", at: fields["phase"])
                }
                expectation.phase = value
            }
            expectation.message = try text(fields["message"], "message")
            expectation.notice = try text(fields["notice"], "notice")
            expectation.stateOf = try text(fields["state"], "state")
            expectation.user = try text(fields["user"], "user")
            expectation.coordinators = try list(fields["coordinators"], "coordinators")
            if let node = fields["data"] {
                guard let mapping = node.mapping else {
                    throw fail("data is a mapping of paths to values, e.g. `data: {cart.paid: true, cart.items.*.id: item:19}`", at: node)
                }
                var values: [String: String] = [:]
                for (key, value) in mapping {
                    guard let path = key.string, !path.isEmpty else { throw fail("a data path must be text such as details.liked", at: key) }
                    guard let scalar = value.scalar?.string else { throw fail("the value of data \(path) must be text, a number or true/false", at: value) }
                    values[path] = scalar
                }
                expectation.data = values
            }
            return ScriptStep(number: number, line: line, step: .expect(expectation), timeout: try duration(fields["timeout"]))
        case "send":
            let fields = try options(body, allowed: Self.sendKeys, kind: kind)
            guard let action = try text(fields["action"], "action"), !action.isEmpty else {
                throw fail("send needs an action, e.g. `- send: {action: logIn, fields: {email: a@b.c, password: x}}`", at: body)
            }
            var values: [String: String] = [:]
            if let node = fields["fields"] {
                guard let mapping = node.mapping else { throw fail("send's fields are a mapping of field names to values", at: node) }
                for (key, value) in mapping {
                    guard let name = key.string else { throw fail("a field name must be text", at: key) }
                    if let items = value.sequence {
                        // A multi-choice field is sent comma-separated.
                        values[name] = items.compactMap { $0.scalar?.string }.joined(separator: ",")
                    } else if let scalar = value.scalar {
                        values[name] = scalar.string
                    } else {
                        throw fail("field \(name) must be text, a number or a list", at: value)
                    }
                }
            }
            var refused: String?
            if let node = fields["refused"] {
                if let yes = node.bool { refused = yes ? "" : nil } else { refused = node.scalar?.string }
            }
            return ScriptStep(
                number: number, line: line,
                step: .send(action: action, fields: values, screen: try text(fields["screen"], "screen"), refused: refused),
                timeout: try duration(fields["timeout"]))
        case "call":
            let fields = try options(body, allowed: ["service", "method", "args", "save", "timeout"], kind: kind)
            guard let service = try text(fields["service"], "service"), !service.isEmpty,
                  let method = try text(fields["method"], "method"), !method.isEmpty else {
                throw fail("call needs a service and a method: `- call: {service: svc.mail, method: outbox, args: {email: a@b.c}, save: {token: token}}`", at: body)
            }
            return ScriptStep(
                number: number, line: line,
                step: .call(service: service, method: method, args: try textMapping(fields["args"], "args"), save: try textMapping(fields["save"], "save")),
                timeout: try duration(fields["timeout"]))
        case "wait":
            guard let duration = try duration(body) else { throw fail("wait takes a duration, e.g. `- wait: 0.5` or `- wait: 200ms`", at: body) }
            return ScriptStep(number: number, line: line, step: .wait(duration))
        case "close":
            return ScriptStep(number: number, line: line, step: .close)
        case "keys":
            guard let keys = body.scalar?.string, !keys.isEmpty else {
                throw fail("keys takes the keys to type, e.g. `- keys: \"me@example.com<Tab>secret<Enter>\"`", at: body)
            }
            return ScriptStep(number: number, line: line, step: .keys(keys))
        case "see":
            if let text = body.scalar?.string, body.mapping == nil, !text.isEmpty {
                return ScriptStep(number: number, line: line, step: .see(text: text, absent: false))
            }
            let fields = try options(body, allowed: ["text", "absent", "timeout"], kind: kind)
            guard let text = try text(fields["text"], "text"), !text.isEmpty else {
                throw fail("see needs the text to find on the screen: `- see: Home` or `- see: {text: Loading, absent: true}`", at: body)
            }
            return ScriptStep(number: number, line: line, step: .see(text: text, absent: try flag(fields["absent"], "absent") ?? false),
                              timeout: try duration(fields["timeout"]))
        default:
            throw fail("\"\(kind)\" is not a step; a step is one of \(Self.kinds.joined(separator: ", "))", at: keyNode)
        }
    }

    /// The step's mapping (null or `{}` is empty), refusing keys it does not know.
    func options(_ body: Node, allowed: [String], kind: String) throws(DriveScriptError) -> [String: Node] {
        if body.scalar != nil, body.null != nil || body.scalar?.string == "" { return [:] }
        guard let mapping = body.mapping else {
            throw fail("\(kind) takes a mapping of \(allowed.joined(separator: ", ")), e.g. `- \(kind): {\(allowed[0]): …}`", at: body)
        }
        var fields: [String: Node] = [:]
        for (key, value) in mapping {
            guard let name = key.string, allowed.contains(name) else {
                throw fail("\(kind) has no option \"\(key.string ?? "?")\"; its options are \(allowed.joined(separator: ", "))", at: key)
            }
            fields[name] = value
        }
        return fields
    }

    /// A mapping of text to text (a call's args, what it saves), empty when absent.
    func textMapping(_ node: Node?, _ name: String) throws(DriveScriptError) -> [String: String] {
        guard let node else { return [:] }
        guard let mapping = node.mapping else { throw fail("\(name) is a mapping of names to values", at: node) }
        var values: [String: String] = [:]
        for (key, value) in mapping {
            guard let key = key.string, let value = value.scalar?.string else {
                throw fail("each entry of \(name) is a name and a text or number value", at: node)
            }
            values[key] = value
        }
        return values
    }

    func text(_ node: Node?, _ name: String) throws(DriveScriptError) -> String? {
        guard let node else { return nil }
        guard let scalar = node.scalar else { throw fail("\(name) must be text", at: node) }
        return scalar.string
    }

    func flag(_ node: Node?, _ name: String) throws(DriveScriptError) -> Bool? {
        guard let node else { return nil }
        guard let value = node.bool else { throw fail("\(name) must be true or false", at: node) }
        return value
    }

    func list(_ node: Node?, _ name: String) throws(DriveScriptError) -> [String]? {
        guard let node else { return nil }
        guard let sequence = node.sequence else { throw fail("\(name) must be a list, e.g. [home, details]", at: node) }
        var items: [String] = []
        for item in sequence {
            guard let text = item.scalar?.string else { throw fail("every item of \(name) must be text", at: item) }
            items.append(text)
        }
        return items
    }

    /// Seconds as a number, or text such as 200ms, 2s, 1.5s.
    func duration(_ node: Node?) throws(DriveScriptError) -> Duration? {
        guard let node else { return nil }
        let text = node.scalar?.string.trimmingCharacters(in: .whitespaces) ?? ""
        let value: Double?
        if text.hasSuffix("ms") { value = Double(text.dropLast(2)).map { $0 / 1000 } }
        else if text.hasSuffix("s") { value = Double(text.dropLast()) }
        else { value = Double(text) }
        guard let value, value > 0, value.isFinite else {
            throw fail("\"\(text)\" is not a duration; write seconds (5, 0.5) or 200ms / 2s", at: node)
        }
        return .milliseconds(Int64((value * 1000).rounded()))
    }
}
