import FlowKit
import FlowProtocol

/// Sign-up: after a successful sign-up pushes EmailVerification; once verified, calls its
/// parent's `goToHome`.
public final class SignUpCoordinator: Coordinator {
    public override class var name: String { "signup" }
    public override class var watchedScreens: [String] { ["signup", "emailverification"] }

    public override func screenChanged(_ change: ScreenChange) {
        guard case .success = change.state else { return }
        let email = change.decode(ScreenData.self)?.account.email ?? ""
        switch (change.screen, change.notice) {
        case ("signup", "verificationSent"):
            navigate(.push(AppScreens.emailVerification(email: email)))
        case ("emailverification", "verified"):
            report("goToHome", args: ["user": email])
        default:
            break
        }
    }
}
