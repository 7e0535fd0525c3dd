import AccountKit
import FlowKit
import FlowProtocol

/// Asks for a password reset mail (`send`); success: notice "resetSent", whether or not the
/// address has an account.
public final class ForgotPasswordViewModel: ViewModel {
    override public class var screen: String { "forgotpassword" }
    override public class var actions: [ActionSpec] { [ActionSpec("send", label: "Send", fields: ["email"])] }

    let users: any UserService

    public init(session: String, users: any UserService) {
        self.users = users
        super.init(session: session)
    }

    override public func handle(_ intent: IntentInput) throws(IntentRefusal) {
        guard intent.action == "send" else { return try super.handle(intent) }
        let email = intent.field("email")
        if let problem = AccountRules.emailProblem(email) { return state = .error(problem) }
        load({ () throws(ServiceFailure) -> ScreenPayload in
            try users.requestPasswordReset(email: email)
            return .notice("resetSent", "If an account exists for \(email), we sent it an e-mail with the next steps.")
        }, message: { failure in
            if case .refused(let refusal) = failure { return CommonMessages.unexpected(refusal) }
            return CommonMessages.unavailable("password reset service")
        })
    }

    override public func presentation() -> Presentation {
        Presentation([
            .text("We will mail you a link to choose a new password."),
            .field("email", label: "E-mail", maxLength: FieldLimits.email),
            .buttons("send"),
        ])
    }
}
