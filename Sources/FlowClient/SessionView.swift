import FlowProtocol
import Foundation

/// A view model's phase, as scripts and people name it.
public enum ScreenPhase: String, Sendable, CaseIterable, Codable {
    case none, loading, success, error

    public init(_ phase: Flowbus_V1_ViewState.Phase) {
        switch phase {
        case .loading: self = .loading
        case .success: self = .success
        case .error: self = .error
        default: self = .none
        }
    }
}

/// One screen kind's view-model state in the session.
public struct ScreenState: Sendable, Equatable {
    public var kind: String
    public var state: Flowbus_V1_ViewState
    public var writer: String
    public var incarnation: UInt64
    /// The Clone sequence of the value.
    public var sequence: UInt64

    public var phase: ScreenPhase { ScreenPhase(state.phase) }
    public var message: String { state.message }
    public var screenVersion: UInt64 { state.screenVersion }
    public var screenID: String { state.screenID }
    /// The notice code the state carries ("verificationSent", "loggedOut", …), empty when none.
    public var notice: String { state.notice }
    public var presentation: Flowbus_V1_Presentation { state.presentation }
    /// The view model's actions, enabled or not.
    public var actions: [Flowbus_V1_Action] { state.actions }
}

/// A live coordinator instance of the session (`/c/<coordinator>/<session>`).
public struct CoordinatorInstanceView: Sendable, Equatable {
    public var name: String
    public var instance: Flowbus_V1_CoordinatorInstance
}

/// Everything a client knows about one session, as of one moment.
public struct SessionView: Sendable, Equatable {
    public var session: String
    /// The session's navigation (`/s/<id>/nav`), nil before the first one or after close.
    public var navigation: Flowbus_V1_Navigation?
    /// Each screen kind's state (`/s/<id>/vm/<kind>`).
    public var states: [String: ScreenState] = [:]
    /// The session record (`/s/<id>/meta`), nil once the session is closed.
    public var record: Flowbus_V1_SessionRecord?
    /// Set once the session was closed while this client followed it: why, for people
    /// ("closed by a client", "idle for 3600 s"); nil while it is open.
    public var closedReason: String?
    /// Live coordinator instances, by coordinator name; filled once the client follows `/c/`.
    public var coordinators: [String: CoordinatorInstanceView] = [:]
    public var followsCoordinators = false
    /// Values ignored because a newer incarnation of the same writer had already written the key.
    public var fencedValues = 0
    /// Values ignored as duplicates (a key_version already seen within one incarnation).
    public var duplicateValues = 0
    /// Values that were not a decodable Envelope of the expected kind.
    public var malformedValues = 0
    /// The Clone sequence of the last change applied.
    public var lastSequence: UInt64 = 0
    /// The apps' payload schemas (`/schema/<package>`), by package.
    public var schemas: [String: AppSchema] = [:]

    public init(session: String) {
        self.session = session
    }

    /// The screen a person sees: the modal if any, else the top of the selected stack.
    public var topScreen: Flowbus_V1_Screen? {
        guard let navigation else { return nil }
        if navigation.hasModal { return navigation.modal }
        return selectedStack?.screens.last
    }

    /// The top screen's kind ("cart", "checkout", …), nil while there is none.
    public var screen: String? { topScreen?.kind }

    /// The stack shown now: the single stack, or the selected tab's.
    public var selectedStack: Flowbus_V1_Navigation.Stack? {
        guard let navigation, !navigation.stacks.isEmpty else { return nil }
        if navigation.root == .stack { return navigation.stacks[0] }
        return navigation.stacks.first { $0.tab == navigation.selectedTab }
    }

    /// The kinds on the shown stack, bottom first.
    public var stack: [String] { selectedStack?.screens.map(\.kind) ?? [] }

    /// The selected tab; nil for a single-stack root.
    public var tab: String? {
        guard let navigation, navigation.root == .tabs else { return nil }
        return navigation.selectedTab
    }

    /// The tab names in tab-bar order (empty for a single-stack root).
    public var tabs: [String] {
        guard let navigation, navigation.root == .tabs else { return [] }
        return navigation.stacks.map(\.tab)
    }

    public var modal: Flowbus_V1_Screen? {
        guard let navigation, navigation.hasModal else { return nil }
        return navigation.modal
    }

    public var navigationVersion: UInt64 { navigation?.version ?? 0 }

    /// The state of the top screen: its kind's state when that state belongs to this screen id
    /// (two Details screens share one state; it belongs to the one that loaded last).
    public var topState: ScreenState? {
        topScreen.flatMap(state(of:))
    }

    /// The state of `screen`: its kind's state when that state belongs to this screen id. A state
    /// of no screen (a reset's) belongs to none: the screen waits for its own. Nor does, for the
    /// top screen, a state of an earlier appearance of it (the screen left and came back under
    /// the same id, and its view model has not had the new `appear` yet): its `appear_key` is not
    /// the navigation's `top_appear_key`, and the screen waits for the state of this appearance
    /// rather than show, and act on, what the one before left (which a `reset` still on its way
    /// would wipe).
    public func state(of screen: Flowbus_V1_Screen) -> ScreenState? {
        guard let state = states[screen.kind], screen.id.isEmpty || state.screenID == screen.id else { return nil }
        if let navigation, !navigation.topAppearKey.isEmpty, !state.state.appearKey.isEmpty,
           state.state.appearKey != navigation.topAppearKey, let top = topScreen, top.id == screen.id, top.kind == screen.kind {
            return nil
        }
        return state
    }

    /// The state's app payload in its protobuf JSON form, read through the published schema; nil
    /// when it has none or its app published no schema.
    public func payload(of state: ScreenState?) -> [String: Any]? {
        guard let state, !state.state.payloadKind.isEmpty,
              let schema = schemas[AppSchema.package(of: state.state.payloadKind)] else { return nil }
        return PayloadReader(schemas: [schema]).object(kind: state.state.payloadKind, bytes: state.state.payload)
    }

    /// Every action the top screen offers now: its view model's (when its state belongs to it),
    /// its owner coordinator's, then the session's (back, selectTab, ok).
    public var offeredActions: [Flowbus_V1_Action] {
        (topState?.actions ?? []) + (topScreen?.actions ?? []) + (navigation?.actions ?? [])
    }

    /// The action named `name` on the top screen, if it offers one.
    public func action(named name: String) -> Flowbus_V1_Action? {
        offeredActions.first { $0.name == name }
    }

    /// The presentation of the top screen: its view model's, else the one the screen carries.
    public var presentation: Flowbus_V1_Presentation? {
        if let state = topState, state.state.hasPresentation { return state.presentation }
        if let top = topScreen, top.hasPresentation { return top.presentation }
        return nil
    }

    /// The phase of the top screen's state (`none` when it has none).
    public var phase: ScreenPhase { topState?.phase ?? .none }

    /// The names of the session's live coordinator instances, sorted.
    public var coordinatorNames: [String] { coordinators.keys.sorted() }

    /// One line per fact, for diffs and logs.
    public var summary: String {
        var parts = ["screen \(screen ?? "-")"]
        if let tab { parts.append("tab \(tab)") }
        parts.append("stack [\(stack.joined(separator: ", "))]")
        if let modal { parts.append("modal \(modal.kind)") }
        if let state = topState {
            parts.append("phase \(state.phase.rawValue)")
            if !state.message.isEmpty { parts.append("message \"\(state.message)\"") }
            if !state.notice.isEmpty { parts.append("notice \(state.notice)") }
        }
        parts.append("nav v\(navigationVersion)")
        return parts.joined(separator: ", ")
    }
}
