import FlowKit
import FlowProtocol

/// The app's screens as navigation values: kind, owner coordinator, title, parameters.
public enum AppScreens {
    public static let tabs = ["home", "likes", "settings", "expenses"]

    public static func signIn() -> Screen { .make("signin", owner: "auth", title: "Sign in") }
    public static func signUp() -> Screen { .make("signup", owner: "signup", title: "Create account") }
    public static func forgotPassword() -> Screen { .make("forgotpassword", owner: "auth", title: "Forgot password") }
    public static func resetPassword(email: String) -> Screen {
        .make("resetpassword", owner: "auth", title: "Choose a new password", params: ["email": email])
    }
    public static func emailVerification(email: String) -> Screen {
        .make("emailverification", owner: "signup", title: "Verify e-mail", params: ["email": email])
    }
    public static func home() -> Screen { .make("home", owner: "home", title: "Home") }
    public static func likes() -> Screen { .make("likes", owner: "main", title: "Likes") }
    public static func settings() -> Screen { .make("settings", owner: "settings", title: "Settings") }
    public static func changePassword() -> Screen { .make("changepassword", owner: "settings", title: "Change password") }
    public static func expenses() -> Screen { .make("expenses", owner: "expenses", title: "Relatório de despesas") }

    /// A Details screen of `item` (e.g. `movie:12`); its id comes from the item, so selecting
    /// the same item twice (a retried or duplicated intent) pushes it once.
    public static func details(item: String, owner: String) -> Screen {
        let id = "details-" + item.map { $0.isLetter || $0.isNumber ? String($0) : "-" }.joined()
        return .make("details", id: id, owner: owner, title: "Details", params: ["item": item])
    }

    /// A confirmation shown as a modal, with no view model: it carries its own presentation; OK
    /// (the session's action) dismisses it.
    public static func confirmation(_ text: String, owner: String) -> Screen {
        .make("confirmation", owner: owner, title: "Done", params: ["text": text], viewModel: false,
              presentation: Presentation([.text(text), .buttons("ok")]))
    }
}
