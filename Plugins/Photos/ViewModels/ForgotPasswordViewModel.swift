import AccountKit
import FlowKit
import FlowProtocol

/// Asks for a password reset code (`send`); success: notice "resetSent" with the address in its
/// account, whether or not the address has an account (the answer reveals nothing).
public final class ForgotPasswordViewModel: ViewModel {
    override public class var screen: String { "forgotpassword" }
    override public class var actions: [ActionSpec] { [ActionSpec("send", label: "Send code", fields: ["email"])] }

    let accounts: any AccountService

    public init(session: String, accounts: any AccountService) {
        self.accounts = accounts
        super.init(session: session)
    }

    /// The notice's text: what happened and where to look.
    public static func sentText(to email: String) -> String {
        "If an account exists for \(email), we mailed it a 6-digit code. Type it on the next screen with your new password."
    }

    override public func handle(_ intent: IntentInput) throws(IntentRefusal) {
        guard intent.action == "send" else { return try super.handle(intent) }
        let email = intent.field("email")
        if let problem = AccountRules.emailProblem(email) { return fail(problem, field: "email") }
        load({ () throws(ServiceFailure) -> ScreenPayload in
            try accounts.requestPasswordReset(email: email)
            // The address goes with the notice: the coordinator opens Choose a new password for it.
            var account = Photos_V1_Account()
            account.email = email
            return .photos(account, notice: "resetSent", Self.sentText(to: email))
        }, message: { failure in
            if case .refused(let refusal) = failure { return PhotosMessages.unexpected(refusal) }
            return PhotosMessages.unavailable("password reset service")
        })
    }

    override public func presentation() -> Presentation {
        Presentation([
            .text("Type your account's e-mail: we will mail you a 6-digit code to choose a new password."),
            .field("email", label: "E-mail", maxLength: FieldLimits.email),
            .buttons("send"),
        ])
    }
}
