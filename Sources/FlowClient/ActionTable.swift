import FlowProtocol

/// Where an action on a screen goes: the screen's view model (data) or a coordinator (navigation).
public enum ActionRoute: Sendable, Equatable, CustomStringConvertible {
    /// A data action: an Intent to `vm.<kind>`, made on the ViewState.screen_version the client saw.
    case viewModel(kind: String)
    /// A navigation action: an Intent to `coord.<name>`, made on the Navigation.version the client saw.
    case coordinator(name: String)

    /// The MDP service the intent is sent to.
    public var service: String {
        switch self {
        case .viewModel(let kind): "vm.\(kind)"
        case .coordinator(let name): "coord.\(name)"
        }
    }

    public var isNavigation: Bool {
        if case .coordinator = self { return true }
        return false
    }

    public var description: String { service }
}

/// The app's actions per screen kind (the Intents table of issue 3), as code: which actions a
/// screen has, and which of them are navigation (sent to a coordinator) rather than data (sent to
/// the screen's view model).
public enum ActionTable {
    /// Navigation actions every screen has; coord.app handles them whoever owns the screen.
    public static let sessionActions: [String] = ["back", "selectTab", "ok"]

    /// Data actions per screen kind, sent to `vm.<kind>`.
    public static let dataActions: [String: [String]] = [
        "signin": ["logIn"],
        "signup": ["appear", "signUp"],
        "emailverification": ["verify", "resend"],
        "forgotpassword": ["send"],
        "home": ["appear"],
        "details": ["appear", "like", "markWatched"],
        "likes": ["appear"],
        "settings": ["appear", "logOut"],
        "changepassword": ["change"],
        "expenses": ["appear", "adicionar", "registrar"],
        "confirmation": [],
    ]

    /// Navigation actions per screen kind, sent to `coord.<Screen.owner>`.
    public static let navigationActions: [String: [String]] = [
        "signin": ["register", "forgotPassword", "verifyEmail"],
        "home": ["select"],
        "details": ["select"],
        "likes": ["select"],
        "settings": ["changePassword"],
    ]

    /// Every action the screen kind has, data first, then its own navigation, then the session's.
    public static func actions(of kind: String) -> [String] {
        (dataActions[kind] ?? []) + (navigationActions[kind] ?? []) + sessionActions
    }

    /// Where `action` on `screen` goes. A navigation action goes to the screen's owner (coord.app
    /// when the screen names none); back, selectTab and ok always go to coord.app.
    public static func route(_ action: String, on screen: Flowbus_V1_Screen) throws(SessionClientError) -> ActionRoute {
        if sessionActions.contains(action) { return .coordinator(name: "app") }
        if navigationActions[screen.kind]?.contains(action) == true {
            return .coordinator(name: screen.owner.isEmpty ? "app" : screen.owner)
        }
        if dataActions[screen.kind]?.contains(action) == true { return .viewModel(kind: screen.kind) }
        guard dataActions[screen.kind] != nil else {
            // A screen kind this table does not know yet: its actions are data actions of its view model.
            return .viewModel(kind: screen.kind)
        }
        throw .unknownAction(action: action, screen: screen.kind, known: actions(of: screen.kind))
    }
}
