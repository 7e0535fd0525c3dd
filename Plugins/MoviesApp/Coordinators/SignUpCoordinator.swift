import FlowKit
import FlowProtocol

/// Sign-up: after a successful sign-up pushes EmailVerification; once verified, calls its
/// parent's `goToHome`.
public final class SignUpCoordinator: Coordinator {
    public override class var name: String { "signup" }
    public override class var watchedScreens: [String] { ["signup", "emailverification"] }

    public override func screenChanged(_ screen: String, state: ViewModelState, data: Flowbus_V1_ScreenData?, screenID: String) {
        guard case .success(let data) = state else { return }
        switch (screen, data.notice.code) {
        case ("signup", "verificationSent"):
            navigate(.push(AppScreens.emailVerification(email: data.account.email)))
        case ("emailverification", "verified"):
            report("goToHome", args: ["user": data.account.email])
        default:
            break
        }
    }
}
