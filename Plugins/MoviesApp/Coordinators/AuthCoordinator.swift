import FlowKit
import FlowProtocol

/// Sign-in: root SignIn; pushes SignUp (owning the SignUp child flow) and ForgotPassword, whose
/// mailed code leads back to SignIn and on to ResetPassword (a new password, then SignIn again);
/// reports `userDidSuccessfullyAuthenticate` to App.
public final class AuthCoordinator: Coordinator {
    public override class var name: String { "auth" }
    public override class var watchedScreens: [String] { ["signin", "forgotpassword", "resetpassword"] }
    public override class var screenActions: [String: [ActionSpec]] {
        ["signin": [ActionSpec("register", label: "Create account"), ActionSpec("forgotPassword", label: "Forgot password"),
                    ActionSpec("verifyEmail", label: "Verify e-mail", fields: ["email"])]]
    }

    public override func start() {
        navigate(.setRoot([AppScreens.signIn()]))
    }

    public override func handle(intent: IntentInput) throws(IntentRefusal) {
        switch intent.action {
        case "register":
            startChild("signup")
            navigate(.push(AppScreens.signUp()))
        case "forgotPassword":
            navigate(.push(AppScreens.forgotPassword()))
        case "verifyEmail":
            let email = intent.field("email")
            guard !email.isEmpty else {
                throw IntentRefusal(.invalidField, "verifyEmail needs the account's e-mail", hint: "send the field email")
            }
            startChild("signup")
            navigate(.push(AppScreens.emailVerification(email: email)))
        default:
            throw .unknownAction(intent.action, screen: Self.name, known: Self.actionNames)
        }
    }

    public override func handle(call method: String, args: [String: String]) throws(IntentRefusal) -> [String: String] {
        guard method == "goToHome" else { return try super.handle(call: method, args: args) }
        // The SignUp child verified the account and signed the session in.
        report("userDidSuccessfullyAuthenticate", args: ["user": args["user"] ?? ""])
        return [:]
    }

    public override func screenChanged(_ change: ScreenChange) {
        guard case .success = change.state else { return }
        switch (change.screen, change.notice) {
        case ("signin", "signedIn"):
            report("userDidSuccessfullyAuthenticate", args: ["user": change.decode(ScreenData.self)?.account.email ?? ""])
        case ("forgotpassword", "resetSent"):
            // Back to SignIn as the documents do, and on to where the mailed code is typed.
            let email = change.decode(ScreenData.self)?.account.email ?? ""
            navigate(
                .popTo("signin"), .push(AppScreens.resetPassword(email: email)),
                .present(AppScreens.confirmation(change.noticeText, owner: Self.name)))
        case ("resetpassword", "passwordReset"):
            navigate(.popTo("signin"), .present(AppScreens.confirmation(change.noticeText, owner: Self.name)))
        default:
            break
        }
    }
}
