import FlowProtocol

/// What a session should look like: every field set must match; nil fields are not checked.
public struct Expectation: Sendable, Equatable, CustomStringConvertible {
    /// The top screen's kind (the modal first, if any).
    public var screen: String?
    public var tab: String?
    /// The kinds on the shown stack, bottom first.
    public var stack: [String]?
    /// The modal's kind, or "none" for no modal.
    public var modal: String?
    /// The phase of the top screen's state (or of `stateOf`'s).
    public var phase: ScreenPhase?
    public var message: String?
    /// The notice code of the state's data ("verificationSent", "loggedOut", …).
    public var notice: String?
    /// Check phase, message and notice on this screen kind's state instead of the top screen's.
    public var stateOf: String?
    /// The signed-in user of the session record ("" for signed out).
    public var user: String?
    /// The session's live coordinator instances (names, any order).
    public var coordinators: [String]?
    /// Values in the state's app payload by `DataPath` (`order.paid: true`, `cart.items.*.id: item:19`,
    /// `cart.items: 3`), read from the same state as phase and message.
    public var data: [String: String]?
    /// Per screen kind, a state must be newer than this version to count: a driver sets it to the
    /// version an intent was made on, so the error of the last try does not pass for the next.
    public var newerThan: [String: UInt64] = [:]

    public init(
        screen: String? = nil, tab: String? = nil, stack: [String]? = nil, modal: String? = nil, phase: ScreenPhase? = nil,
        message: String? = nil, notice: String? = nil, stateOf: String? = nil, user: String? = nil, coordinators: [String]? = nil
    ) {
        self.screen = screen
        self.tab = tab
        self.stack = stack
        self.modal = modal
        self.phase = phase
        self.message = message
        self.notice = notice
        self.stateOf = stateOf
        self.user = user
        self.coordinators = coordinators
    }

    /// One row of a diff.
    public struct Difference: Sendable, Equatable {
        public var field: String
        public var expected: String
        public var actual: String
        public var matches: Bool
    }

    public var needsCoordinators: Bool { coordinators != nil }
    var checksState: Bool { phase != nil || message != nil || notice != nil || data != nil }

    /// The state the phase, message and notice are read from, if it is fresh enough.
    func state(in view: SessionView) -> (state: ScreenState?, stale: Bool) {
        let state = stateOf.map { view.states[$0] } ?? view.topState
        guard let state else { return (nil, false) }
        if let floor = newerThan[state.kind], state.screenVersion <= floor { return (state, true) }
        return (state, false)
    }

    /// Whether every field set matches: what `differences(from:)` says, without writing a row of
    /// text. A driver asks this of every view it applies, and the diff renders the payload's values
    /// and reads the payload once per path; here the payload is read once, and only when
    /// everything cheaper matched.
    public func isMet(by view: SessionView) -> Bool {
        if let screen, screen != (view.screen ?? "(none)") { return false }
        if let stack {
            let shown = view.stack
            // The diff compares the lists as text; arrays that differ may still read the same.
            if stack != shown, Self.list(stack) != Self.list(shown) { return false }
        }
        if let tab, tab != (view.tab ?? "(none)") { return false }
        if let modal, modal != (view.modal?.kind ?? "none") { return false }
        if let user {
            let expected = user.isEmpty ? "(signed out)" : user
            let actual = (view.record?.user).map { $0.isEmpty ? "(signed out)" : $0 } ?? "(no record)"
            if expected != actual { return false }
        }
        if let coordinators {
            let expected = coordinators.sorted()
            let actual = view.coordinatorNames
            if expected != actual, Self.list(expected) != Self.list(actual) { return false }
        }
        guard checksState else { return true }
        let (state, stale) = state(in: view)
        let fresh = stale ? nil : state
        if let phase, stale || (fresh?.phase ?? .none) != phase { return false }
        if let message, message != (fresh?.message ?? "") { return false }
        if let notice, notice != (fresh?.notice ?? "") { return false }
        if let data, !data.isEmpty {
            if stale { return false }
            let payload = view.payload(of: fresh)
            for (path, expected) in data where !DataPath.matches(expected, at: path, in: payload) { return false }
        }
        return true
    }

    /// Every checked field, expected against actual, plus the screen's context fields (marked as
    /// matching) so a failure shows where the session really is.
    public func differences(from view: SessionView) -> [Difference] {
        var rows: [Difference] = []
        func row(_ field: String, _ expected: String?, _ actual: String) {
            rows.append(Difference(field: field, expected: expected ?? "(any)", actual: actual, matches: expected.map { $0 == actual } ?? true))
        }
        row("screen", screen, view.screen ?? "(none)")
        row("stack", stack.map(Self.list), Self.list(view.stack))
        row("tab", tab, view.tab ?? "(none)")
        row("modal", modal, view.modal?.kind ?? "none")
        let (state, stale) = state(in: view)
        let staleNote = stale ? " (v\(state?.screenVersion ?? 0), from before the last intent)" : ""
        let fresh = stale ? nil : state
        let phaseLabel = stateOf.map { "phase of \($0)" } ?? "phase"
        row(phaseLabel, phase?.rawValue, (fresh?.phase ?? .none).rawValue + (stale ? staleNote : ""))
        if stale, phase != nil { rows[rows.count - 1].matches = false }
        row("message", message.map { "\"\($0)\"" }, "\"\(fresh?.message ?? "")\"")
        if let notice { row("notice", notice, fresh?.notice ?? "") }
        for (path, expected) in (data ?? [:]).sorted(by: { $0.key < $1.key }) {
            let payload = view.payload(of: fresh)
            let actual = stale ? "(from before the last intent)"
                : payload == nil && fresh?.state.payloadKind.isEmpty == false ? "(the schema of \(fresh!.state.payloadKind) is not published)"
                : DataPath.describe(path, in: payload)
            rows.append(Difference(
                field: "data \(path)", expected: expected, actual: actual,
                matches: !stale && DataPath.matches(expected, at: path, in: payload)))
        }
        if let user { row("user", user.isEmpty ? "(signed out)" : user, (view.record?.user).map { $0.isEmpty ? "(signed out)" : $0 } ?? "(no record)") }
        if let coordinators { row("coordinators", Self.list(coordinators.sorted()), Self.list(view.coordinatorNames)) }
        return rows
    }

    public var description: String {
        var parts: [String] = []
        if let screen { parts.append("screen \(screen)") }
        if let tab { parts.append("tab \(tab)") }
        if let stack { parts.append("stack \(Self.list(stack))") }
        if let modal { parts.append("modal \(modal)") }
        if let phase { parts.append((stateOf.map { "\($0) " } ?? "") + "phase \(phase.rawValue)") }
        if let message { parts.append("message \"\(message)\"") }
        if let notice { parts.append("notice \(notice)") }
        if let data { parts.append(data.sorted(by: { $0.key < $1.key }).map { "\($0.key) \($0.value)" }.joined(separator: ", ")) }
        if let user { parts.append("user \(user.isEmpty ? "(signed out)" : user)") }
        if let coordinators { parts.append("coordinators \(Self.list(coordinators.sorted()))") }
        return parts.isEmpty ? "anything" : parts.joined(separator: ", ")
    }

    static func list(_ items: [String]) -> String { "[" + items.joined(separator: ", ") + "]" }
}

extension SessionClient {
    /// Waits until `expectation` is met; on timeout throws `SessionWaitTimeout` with the diff.
    @discardableResult
    public func expect(_ expectation: Expectation, timeout: Duration = .seconds(5)) async throws -> SessionView {
        if expectation.needsCoordinators { try await followCoordinators() }
        do {
            return try await waitUntil(timeout: timeout, expectation.description) { expectation.isMet(by: $0) }
        } catch {
            var failure = error
            failure.differences = expectation.differences(from: error.view)
            throw failure
        }
    }
}
