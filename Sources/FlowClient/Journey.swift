import FlowProtocol
import Foundation
import Logging

/// What became of one step.
public struct StepReport: Sendable, Equatable, Codable {
    public var number: Int
    public var line: Int
    public var kind: String
    public var summary: String
    public var passed: Bool
    public var milliseconds: Double
    /// The failure, with its diff and the last events, when the step did not pass.
    public var failure: String?
}

/// What became of a whole script.
public struct JourneyReport: Sendable, Equatable, Codable {
    public var script: String
    public var session: String?
    public var passed: Bool
    public var steps: [StepReport]
    public var variables: [String: String]
}

/// Why a step failed (beyond a wait that ran out, which is a `SessionWaitTimeout`).
public struct JourneyFailure: Error, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Runs drive steps against one session: the engine of `flowbus drive` and of integration tests,
/// which call the same steps from Swift (`open()`, `send(_:fields:)`, `expect(_:)`, `call(_:method:args:save:)`).
public final class Journey {
    public let endpoints: BusEndpoints
    public var options: SessionClientOptions
    public var defaultTimeout: Duration
    /// The least any step of a script may wait, whatever the step says: `flowbus chaos` raises it,
    /// as a person waits longer for a flow under faults than the script's author planned.
    public var minimumStepTimeout: Duration = .zero
    /// `${name}` in any text of a step is replaced by this value. `session` and `unique` are set by the journey.
    public private(set) var variables: [String: String]
    public private(set) var client: SessionClient?
    /// Whether the session was attached read-only (`attach` with observe).
    public private(set) var observing = false
    /// Plays `keys` and `see` steps; without one (`flowbus drive`) those steps fail with a hint.
    public var terminal: (any JourneyTerminal)?
    let logger: Logger
    private var connection: BusConnection?
    /// A request pool and Clone feed shared with other journeys (the simulator's), or nil: each
    /// session then has its own.
    private let shared: (connection: BusConnection, feed: SharedSessionFeed?)?
    /// Per screen kind, the version the last data intent was made on: later expectations of that
    /// kind's phase count only newer states.
    private var sentVersions: [String: UInt64] = [:]

    public init(
        endpoints: BusEndpoints, options: SessionClientOptions = .init(), variables: [String: String] = [:],
        defaultTimeout: Duration = .seconds(5), shared: (connection: BusConnection, feed: SharedSessionFeed?)? = nil,
        logger: Logger = Logger(label: "flowbus.drive")
    ) {
        self.shared = shared
        connection = shared?.connection
        self.endpoints = endpoints
        self.options = options
        self.defaultTimeout = defaultTimeout
        self.logger = logger
        var variables = variables
        if variables["unique"] == nil { variables["unique"] = String(UUID().uuidString.prefix(8)).lowercased() }
        self.variables = variables
    }

    deinit {
        client?.stop()
        if shared == nil { connection?.stop() }
    }

    /// Stops following the session (it stays open on the bus unless a step closed it).
    public func stop() {
        client?.stop()
        client = nil
        guard shared == nil else { return }
        connection?.stop()
        connection = nil
    }

    // MARK: Steps from Swift

    /// Opens a new session, or attaches to `session`.
    @discardableResult
    public func open(session: String? = nil) async throws -> SessionClient {
        client?.stop()
        // An open that fails leaves no client: not the last journey's, taken for this one's.
        client = nil
        if let shared {
            guard session == nil else { throw JourneyFailure(Self.sharedOpensOnly) }
            return adopt(try await SessionClient.open(on: shared.connection, feed: shared.feed, options: options))
        }
        let opened = if let session {
            try await SessionClient.attach(session, endpoints: endpoints, options: options, logger: logger)
        } else {
            try await SessionClient.open(endpoints, options: options, logger: logger)
        }
        return adopt(opened)
    }

    @discardableResult
    public func attach(_ session: String, observe: Bool = false) async throws -> SessionClient {
        if shared != nil { throw JourneyFailure(Self.sharedOpensOnly) }
        client?.stop()
        client = nil
        let attached = adopt(try await SessionClient.attach(session, endpoints: endpoints, announce: !observe, options: options, logger: logger))
        observing = observe
        return attached
    }

    private func adopt(_ client: SessionClient) -> SessionClient {
        self.client = client
        observing = false
        variables["session"] = client.session
        sentVersions = [:]
        return client
    }

    public func requireClient() throws -> SessionClient {
        guard let client else { throw JourneyFailure("no session yet: start the script with `- open: {}` or `- attach: SESSION`") }
        return client
    }

    /// Waits until the session meets `expectation` (counting only states newer than the last data intent on that kind).
    @discardableResult
    public func expect(_ expectation: Expectation, timeout: Duration? = nil) async throws -> SessionView {
        var expectation = expectation
        for (kind, version) in sentVersions where expectation.newerThan[kind] == nil { expectation.newerThan[kind] = version }
        return try await requireClient().expect(expectation, timeout: timeout ?? defaultTimeout)
    }

    /// Sends `action` on the top screen (after waiting for a top screen, or for `screen` when given).
    /// Throws unless the intent is applied, or, with `refused`, unless it is refused (with that code name when not empty).
    @discardableResult
    public func send(
        _ action: String, fields: [String: String] = [:], screen: String? = nil, refused: String? = nil, timeout: Duration? = nil
    ) async throws -> IntentOutcome {
        let client = try requireClient()
        let waited = screen.map { "top screen \($0)" } ?? "a screen to act on"
        try await client.waitUntil(timeout: timeout ?? defaultTimeout, waited) { view in
            screen.map { view.screen == $0 } ?? (view.topScreen != nil)
        }
        // The screen's state (which offers the action) may still be on its way, as for a person.
        var prepared = try await client.prepareWhenOffered(action: action, fields: fields, wait: timeout ?? defaultTimeout)
        let screenID = client.view.topScreen?.id
        var outcome = try await client.send(prepared)
        // Refused as stale while this client had not seen the screen's newest version yet (it was
        // still on its way): look at the screen again once it has arrived, and repeat the action,
        // as the refusal says a person would. A refusal on the version this client saw stands.
        var looks = 0
        var movedOn = false
        while refused == nil, outcome.isStale, looks < 3, outcome.reply.screenVersion > prepared.version {
            looks += 1
            let route = prepared.route, current = outcome.reply.screenVersion
            try await client.waitUntil(timeout: timeout ?? defaultTimeout, "\(route) at version \(current) to reach this client") { view in
                Self.version(of: route, in: view) >= current
            }
            // The session went on to another screen: an earlier try of this very intent was
            // applied and its answer lost (a retry that a restarted or reset view model no longer
            // knows is told "stale"). A person looks at where it went; so does the next step.
            if let screenID, client.view.topScreen?.id != screenID {
                movedOn = true
                break
            }
            prepared = try await client.prepareWhenOffered(action: action, fields: fields, wait: timeout ?? defaultTimeout)
            outcome = try await client.send(prepared)
        }
        if movedOn { return outcome }
        if case .viewModel(let kind) = prepared.route, outcome.applied { sentVersions[kind] = prepared.version }
        if let refused {
            guard let error = outcome.error else {
                throw JourneyFailure("expected \(action) to be refused\(refused.isEmpty ? "" : " with \(refused)"), but it was applied: \(outcome)")
            }
            if !refused.isEmpty, Self.codeName(error.code).lowercased() != refused.lowercased() {
                throw JourneyFailure("expected \(action) to be refused with \(refused), but it was refused with \(Self.codeName(error.code)): \(outcome)")
            }
        } else if !outcome.applied {
            throw JourneyFailure("\(outcome)\n  on: \(client.view.summary)")
        }
        return outcome
    }

    /// The version an action on `route` is made on, as `view` shows it.
    static func version(of route: ActionRoute, in view: SessionView) -> UInt64 {
        switch route {
        case .coordinator: view.navigationVersion
        case .viewModel(let kind): view.states[kind]?.screenVersion ?? 0
        }
    }

    /// Calls `service` (`ServiceCall` `method` with `args`) until its result holds every key named
    /// in `save` (variable → result key), then saves them as variables; with nothing to save,
    /// one call. A refusal fails at once.
    @discardableResult
    public func call(_ service: String, method: String, args: [String: String] = [:], save: [String: String] = [:],
                     timeout: Duration? = nil) async throws -> Flowbus_V1_ServiceReply {
        let connection = try self.connection ?? BusConnection(endpoints: endpoints, options: options, logger: logger)
        self.connection = connection
        let deadline = ContinuousClock.now + (timeout ?? defaultTimeout)
        while true {
            let reply = try await connection.serviceCall(service, method: method, args: args)
            if !reply.refusal.isEmpty {
                throw JourneyFailure("\(service) \(method) refused: \(reply.refusal) (result \(reply.result.sorted { $0.key < $1.key }))")
            }
            let missing = save.values.filter { (reply.result[$0] ?? "").isEmpty }
            if missing.isEmpty {
                for (variable, key) in save { variables[variable] = reply.result[key] }
                return reply
            }
            guard ContinuousClock.now < deadline else {
                throw JourneyFailure("\(service) \(method) did not answer \(missing.sorted().joined(separator: ", ")) within \(timeout ?? defaultTimeout); its result has \(reply.result.keys.sorted().joined(separator: ", "))")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Closes the session on the bus.
    public func close() async throws {
        try await requireClient().close()
    }

    // MARK: Scripts

    /// Runs every step in order, stopping at the first that fails; `progress` sees each report as it is made.
    public func run(_ script: DriveScript, progress: (StepReport) -> Void = { _ in }) async -> JourneyReport {
        var reports: [StepReport] = []
        var passed = true
        for step in script.steps {
            let started = ContinuousClock.now
            var report = StepReport(number: step.number, line: step.line, kind: step.step.name, summary: "", passed: true, milliseconds: 0)
            do {
                let resolved = try substitute(step.step)
                report.summary = Self.summary(resolved)
                try await perform(resolved, timeout: step.timeout.map { max($0, minimumStepTimeout) })
            } catch {
                report.passed = false
                report.failure = "\(step.label) failed: \(error)"
                passed = false
            }
            let elapsed = (ContinuousClock.now - started).components
            report.milliseconds = Double(elapsed.seconds) * 1000 + Double(elapsed.attoseconds) / 1e15
            reports.append(report)
            progress(report)
            if !report.passed { break }
        }
        return JourneyReport(script: script.name, session: client?.session, passed: passed, steps: reports, variables: variables)
    }

    /// Plays one step of a script (variables expanded, its timeout at least `minimumStepTimeout`):
    /// what `run` does for each, for a caller that times or paces the steps itself (`flowbus sim`).
    public func play(_ step: ScriptStep) async throws {
        try await perform(try substitute(step.step), timeout: step.timeout.map { max($0, minimumStepTimeout) })
    }

    /// Sets `${name}` for the steps that follow.
    public func setVariable(_ name: String, _ value: String) {
        variables[name] = value
    }

    func perform(_ step: DriveStep, timeout: Duration?) async throws {
        switch step {
        case .open(let session): try await open(session: session)
        case .attach(let session, let observe): try await attach(session, observe: observe)
        case .expect(let expectation): try await expect(expectation, timeout: timeout)
        case .send(let action, let fields, let screen, let refused):
            try await send(action, fields: fields, screen: screen, refused: refused, timeout: timeout)
        case .call(let service, let method, let args, let save): try await call(service, method: method, args: args, save: save, timeout: timeout)
        case .wait(let duration): try await Task.sleep(for: duration)
        case .close: try await close()
        case .keys(let keys):
            guard let terminal else { throw JourneyFailure(Self.needsTerminal) }
            try await terminal.press(keys, journey: self, timeout: timeout ?? defaultTimeout)
        case .see(let text, let absent):
            guard let terminal else { throw JourneyFailure(Self.needsTerminal) }
            try await terminal.see(text, absent: absent, journey: self, timeout: timeout ?? defaultTimeout)
        }
    }

    static let sharedOpensOnly = "a simulated journey opens a session of its own: use `- open: {}` (attach to a named session with `flowbus drive`)"

    static let needsTerminal = "keys and see steps drive the terminal client's screen: play this script with `flowbus client --script FILE`"

    // MARK: Variables

    func substitute(_ step: DriveStep) throws -> DriveStep {
        switch step {
        case .open(let session): return .open(session: try session.map(expand))
        case .attach(let session, let observe): return .attach(session: try expand(session), observe: observe)
        case .expect(var expectation):
            expectation.screen = try expectation.screen.map(expand)
            expectation.tab = try expectation.tab.map(expand)
            expectation.stack = try expectation.stack?.map(expand)
            expectation.modal = try expectation.modal.map(expand)
            expectation.message = try expectation.message.map(expand)
            expectation.notice = try expectation.notice.map(expand)
            expectation.stateOf = try expectation.stateOf.map(expand)
            expectation.user = try expectation.user.map(expand)
            expectation.coordinators = try expectation.coordinators?.map(expand)
            expectation.data = try expectation.data?.mapValues(expand)
            return .expect(expectation)
        case .send(let action, let fields, let screen, let refused):
            return .send(action: try expand(action), fields: try fields.mapValues(expand), screen: try screen.map(expand), refused: refused)
        case .call(let service, let method, let args, let save):
            return .call(service: try expand(service), method: try expand(method), args: try args.mapValues(expand), save: save)
        case .wait, .close: return step
        case .keys(let keys): return .keys(try expand(keys))
        case .see(let text, let absent): return .see(text: try expand(text), absent: absent)
        }
    }

    /// Replaces every `${name}`; an unknown name is an error that lists the known ones.
    public func expand(_ text: String) throws -> String {
        var result = ""
        var rest = Substring(text)
        while let open = rest.range(of: "${") {
            result += rest[..<open.lowerBound]
            guard let close = rest[open.upperBound...].firstIndex(of: "}") else {
                throw JourneyFailure("\"\(text)\" has a ${ without its closing }")
            }
            let name = String(rest[open.upperBound..<close])
            guard let value = variables[name] else {
                throw JourneyFailure("${\(name)} is not set; set it with a call step (save: {\(name): KEY}) or --var \(name)=VALUE; known: \(variables.keys.sorted().joined(separator: ", "))")
            }
            result += value
            rest = rest[rest.index(after: close)...]
        }
        return result + rest
    }

    static func summary(_ step: DriveStep) -> String {
        switch step {
        case .open(let session): session.map { "attach \($0)" } ?? "open a new session"
        case .attach(let session, let observe): (observe ? "observe " : "attach ") + session
        case .expect(let expectation): "expect \(expectation)"
        case .send(let action, let fields, _, let refused):
            "send \(action)" + (fields.isEmpty ? "" : " {" + fields.keys.sorted().joined(separator: ", ") + "}")
                + (refused.map { " (refused\($0.isEmpty ? "" : " \($0)"))" } ?? "")
        case .call(let service, let method, let args, let save):
            "call \(service) \(method)" + (args.isEmpty ? "" : " {" + args.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + "}")
                + (save.isEmpty ? "" : " → " + save.keys.sorted().map { "${\($0)}" }.joined(separator: ", "))
        case .wait(let duration): "wait \(duration)"
        case .close: "close the session"
        case .keys(let keys): "keys \(keys)"
        case .see(let text, let absent): (absent ? "no longer see " : "see ") + "\"\(text)\""
        }
    }

    /// The error code's name as scripts write it: staleIntent, invalidField, fenced…
    static func codeName(_ code: ErrorCode) -> String {
        let text = "\(code)"
        return text.hasPrefix(".") ? String(text.dropFirst()) : text
    }
}

/// What plays `keys` and `see` steps: the terminal client on a virtual screen (FlowTerminal).
public protocol JourneyTerminal: AnyObject {
    func press(_ keys: String, journey: Journey, timeout: Duration) async throws
    func see(_ text: String, absent: Bool, journey: Journey, timeout: Duration) async throws
}
