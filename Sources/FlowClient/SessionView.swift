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

/// One screen kind's view-model state in the session, with its data decoded.
public struct ScreenState: Sendable, Equatable {
    public var kind: String
    public var state: Flowbus_V1_ViewState
    /// The decoded `ScreenData`, when the payload holds one.
    public var data: Flowbus_V1_ScreenData?
    public var writer: String
    public var incarnation: UInt64
    /// The Clone sequence of the value.
    public var sequence: UInt64

    public var phase: ScreenPhase { ScreenPhase(state.phase) }
    public var message: String { state.message }
    public var screenVersion: UInt64 { state.screenVersion }
    public var screenID: String { state.screenID }
    /// The notice code the data carries ("verificationSent", "loggedOut", …), empty when none.
    public var notice: String { data?.notice.code ?? "" }
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

    public init(session: String) {
        self.session = session
    }

    /// The screen a person sees: the modal if any, else the top of the selected stack.
    public var topScreen: Flowbus_V1_Screen? {
        guard let navigation else { return nil }
        if navigation.hasModal { return navigation.modal }
        return selectedStack?.screens.last
    }

    /// The top screen's kind ("signin", "details", …), nil while there is none.
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
        guard let top = topScreen, let state = states[top.kind] else { return nil }
        guard state.screenID.isEmpty || top.id.isEmpty || state.screenID == top.id else { return nil }
        return state
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
