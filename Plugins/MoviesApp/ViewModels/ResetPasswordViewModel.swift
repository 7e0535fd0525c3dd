import AccountKit
import FlowKit
import FlowProtocol

/// Chooses a new password for the screen's `email` parameter with the 6-digit code Forgot
/// password mailed (`setPassword`, notice "passwordReset"), or mails a new code (`resend`, notice
/// "resetSent"). The form is `ResetPasswordForm`, as in the Photos app.
public final class ResetPasswordViewModel: ViewModel {
    override public class var screen: String { "resetpassword" }
    override public class var actions: [ActionSpec] { ResetPasswordForm.actions }

    let users: any UserService

    public init(session: String, users: any UserService) {
        self.users = users
        super.init(session: session)
    }

    override public func handle(_ intent: IntentInput) throws(IntentRefusal) {
        guard ["setPassword", "resend"].contains(intent.action) else { return try super.handle(intent) }
        let email = (intent.params["email"] ?? "").trimmingWhitespace
        guard !email.isEmpty else { throw Self.missingParameter("email", example: "ana@example.com") }
        if intent.action == "resend" { return resend(email: email) }
        let code = intent.field("code")
        let password = intent.rawField("password")
        if let problem = ResetPasswordForm.problem(
            code: code, password: password, confirmation: intent.rawField("passwordConfirmation"), email: email) {
            return fail(problem.message, field: problem.field)
        }
        load({ () throws(ServiceFailure) -> ScreenPayload in
            try users.resetPassword(email: email, code: code, newPassword: password)
            return .notice(ResetPasswordForm.changedNotice, ResetPasswordForm.changed)
        }, message: { failure in Self.message(failure, email: email) }, field: { failure in
            switch failure {
            case .refused(.wrongToken), .refused(.expiredToken): "code"
            case .refused(.passwordTooShort): "password"
            default: nil
            }
        })
    }

    func resend(email: String) {
        load({ () throws(ServiceFailure) -> ScreenPayload in
            try users.requestPasswordReset(email: email)
            return .notice("resetSent", ResetPasswordForm.resent(to: email))
        }, message: { failure in Self.message(failure, email: email) })
    }

    static func message(_ failure: ServiceFailure, email: String) -> String {
        switch failure {
        case .refused(.wrongToken):
            "That code is not right. Check the latest mail we sent to \(email), or choose Send a new code."
        case .refused(.expiredToken): "That code has expired. Choose Send a new code, then type the new one here."
        case .refused(.passwordTooShort):
            "The password is too short: use at least \(AccountRules.minimumPasswordLength) characters."
        case .refused(.tooManyAttempts): CommonMessages.tooManyAttempts
        case .refused(let refusal): CommonMessages.unexpected(refusal)
        case .unavailable: CommonMessages.unavailable("password reset service")
        }
    }

    override public func presentation() -> Presentation {
        mailedCodePresentation(ResetPasswordForm.instructions(email: mailedAddress), inputs: ResetPasswordForm.inputs, showing: "resetSent")
    }
}
