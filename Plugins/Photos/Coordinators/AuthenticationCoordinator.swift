import FlowKit
import FlowProtocol

/// Welcome → Log in / Create account; Forgot password from Welcome or Log in, whose mailed code
/// leads back (to Log in, or Welcome) and on to Choose a new password, then back again. A
/// successful log in or a new account reports `userDidSuccessfullyAuthenticate` to the root.
public final class AuthenticationCoordinator: Coordinator {
    public override class var name: String { "authentication" }
    public override class var watchedScreens: [String] { ["login", "createaccount", "forgotpassword", "resetpassword"] }

    static let forgotPassword = ActionSpec("forgotPassword", label: "Forgot password")

    public override class var screenActions: [String: [ActionSpec]] {
        [
            "welcome": [ActionSpec("logIn", label: "Log in"), ActionSpec("createAccount", label: "Create account"), forgotPassword],
            "login": [forgotPassword],
        ]
    }

    /// The screen Forgot password was pushed from: where a sent code returns to.
    static let forgotPasswordFrom = "forgotPasswordFrom"

    public override func start() {
        navigate(.setRoot([PhotosScreens.welcome()]))
    }

    public override func handle(intent: IntentInput) throws(IntentRefusal) {
        switch intent.action {
        case "logIn":
            navigate(.push(PhotosScreens.logIn()))
        case "createAccount":
            navigate(.push(PhotosScreens.createAccount()))
        case "forgotPassword":
            context[Self.forgotPasswordFrom] = intent.screenID == "login" ? "login" : "welcome"
            navigate(.push(PhotosScreens.forgotPassword()))
        default:
            throw .unknownAction(intent.action, screen: Self.name, known: Self.actionNames)
        }
    }

    /// Back to Log in when Forgot password was pushed from it, else to the root.
    var backToLogIn: NavigationOp { context[Self.forgotPasswordFrom] == "login" ? .popTo("login") : .popToRoot() }

    public override func screenChanged(_ change: ScreenChange) {
        guard case .success = change.state else { return }
        switch (change.screen, change.notice) {
        case ("login", "signedIn"), ("createaccount", "accountCreated"):
            report("userDidSuccessfullyAuthenticate", args: ["user": change.decode(Photos_V1_Account.self)?.email ?? ""])
        case ("forgotpassword", "resetSent"):
            // The document's navigateBackToLogIn: back to Log in when it is in the stack, else to
            // the root; then on to where the mailed code is typed.
            let email = change.decode(Photos_V1_Account.self)?.email ?? ""
            navigate(backToLogIn, .push(PhotosScreens.resetPassword(email: email)),
                     .present(PhotosScreens.confirmation(change.noticeText, owner: Self.name)))
        case ("resetpassword", "passwordReset"):
            navigate(backToLogIn, .present(PhotosScreens.confirmation(change.noticeText, owner: Self.name)))
        default:
            break
        }
    }
}
