import FlowKit
import FlowProtocol

/// Verifies the e-mail of the screen's `email` parameter with the mailed token (`verify`),
/// signing the session in (notice "verified"), or mails a new token (`resend`, notice
/// "verificationSent").
public final class EmailVerificationViewModel: ViewModel {
    override public class var screen: String { "emailverification" }
    override public class var actions: [ActionSpec] {
        [ActionSpec("verify", label: "Verify", fields: ["token"]), ActionSpec("resend", label: "Resend code")]
    }

    let users: any UserService

    public init(session: String, users: any UserService) {
        self.users = users
        super.init(session: session)
    }

    override public func handle(_ intent: IntentInput) throws(IntentRefusal) {
        guard ["verify", "resend"].contains(intent.action) else { return try super.handle(intent) }
        let email = (intent.params["email"] ?? "").trimmingWhitespace
        guard !email.isEmpty else { throw Self.missingParameter("email", example: "ana@example.com") }
        if intent.action == "verify" { verify(email: email, token: intent.field("token")) } else { resend(email: email) }
    }

    func verify(email: String, token: String) {
        if token.isEmpty { return fail("Enter the 6-digit code we sent to \(email).", field: "token") }
        guard token.count == 6, token.allSatisfy(\.isASCIIDigit) else {
            return fail("The code has 6 digits. Check the e-mail we sent to \(email) and type it again.", field: "token")
        }
        load({ () throws(ServiceFailure) -> ScreenPayload in
            let account = try users.verify(email: email, token: token, session: session)
            return .account(account, notice: "verified", "Your e-mail is verified. Welcome, \(account.name)!")
        }, message: { failure in Self.message(failure, email: email) },
        field: { [.refused(.wrongToken), .refused(.expiredToken)].contains($0) ? "token" : nil })
    }

    func resend(email: String) {
        load({ () throws(ServiceFailure) -> ScreenPayload in
            try users.resendToken(email: email)
            var account = Account()
            account.email = email
            return .account(account, notice: "verificationSent", "We sent a new code to \(email).")
        }, message: { failure in Self.message(failure, email: email) })
    }

    static func message(_ failure: ServiceFailure, email: String) -> String {
        switch failure {
        case .refused(.wrongToken):
            "That code is not right. Check the latest e-mail we sent to \(email), or choose Resend code for a new one."
        case .refused(.expiredToken):
            "That code has expired. Choose Resend code to get a new one, then type it here."
        case .refused(.alreadyVerified): "\(email) is already verified. Go back and sign in."
        case .refused(.unknownAccount): "There is no account for \(email). Go back and sign up again."
        case .refused(.tooManyAttempts): CommonMessages.tooManyAttempts
        case .refused(let refusal): CommonMessages.unexpected(refusal)
        case .unavailable: CommonMessages.unavailable("verification service")
        }
    }

    override public func presentation() -> Presentation {
        mailedCodePresentation("We sent a 6-digit code to \(mailedAddress).", inputs: [
            .field("token", label: "Code", kind: .number, maxLength: FieldLimits.token),
            .buttons("verify", "resend"),
        ], showing: "verificationSent")
    }
}
