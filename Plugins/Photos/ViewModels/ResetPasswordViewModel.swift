import AccountKit
import FlowKit
import FlowProtocol
import Foundation

/// Chooses a new password for the screen's `email` parameter with the 6-digit code Forgot
/// password mailed (`setPassword`, notice "passwordReset"), or mails a new code (`resend`, notice
/// "resetSent"). The form is `ResetPasswordForm`, as in the movies app.
public final class ResetPasswordViewModel: ViewModel {
    override public class var screen: String { "resetpassword" }
    override public class var actions: [ActionSpec] { ResetPasswordForm.actions }

    let accounts: any AccountService

    public init(session: String, accounts: any AccountService) {
        self.accounts = accounts
        super.init(session: session)
    }

    override public func handle(_ intent: IntentInput) throws(IntentRefusal) {
        guard ["setPassword", "resend"].contains(intent.action) else { return try super.handle(intent) }
        let email = (intent.params["email"] ?? "").trimmingCharacters(in: .whitespaces)
        guard !email.isEmpty else {
            throw IntentRefusal(.invalidField, "the resetpassword screen has no \"email\" parameter", hint: "open it with params email=<address>")
        }
        if intent.action == "resend" {
            return load({ () throws(ServiceFailure) -> ScreenPayload in
                try accounts.requestPasswordReset(email: email)
                return .notice("resetSent", ResetPasswordForm.resent(to: email))
            }, message: Self.message)
        }
        let code = intent.field("code")
        let password = intent.rawField("password")
        if let problem = ResetPasswordForm.problem(
            code: code, password: password, confirmation: intent.rawField("passwordConfirmation"), email: email) {
            return fail(problem.message, field: problem.field)
        }
        load({ () throws(ServiceFailure) -> ScreenPayload in
            try accounts.resetPassword(email: email, code: code, newPassword: password)
            return .notice(ResetPasswordForm.changedNotice, ResetPasswordForm.changed)
        }, message: Self.message, field: { failure in
            switch failure {
            case .refused(.wrongCode), .refused(.expiredCode): "code"
            case .refused(.passwordTooShort): "password"
            default: nil
            }
        })
    }

    static func message(_ failure: ServiceFailure) -> String {
        switch failure {
        case .refused(let refusal): refusal.message
        case .unavailable: PhotosMessages.unavailable("password reset service")
        }
    }

    override public func presentation() -> Presentation {
        let email = screenParams["email"].flatMap { $0.isEmpty ? nil : $0 } ?? "your e-mail"
        var components: [PresentationComponent] = [
            .text(ResetPasswordForm.instructions(email: email)),
            .muted("No real mail here: `flowbus call svc.mail outbox email=\(email)` prints the code."),
        ] + ResetPasswordForm.inputs
        if case .success(let shown) = state, shown.notice?.code == "resetSent", let text = shown.notice?.text {
            components.append(.notice(text))
        }
        return Presentation(components)
    }
}
