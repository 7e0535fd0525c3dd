import AccountKit
import FlowKit
import FlowProtocol

/// Log in with e-mail and password (`logIn`), with the movies app's sign-in rules and messages.
/// Success: the account with notice "signedIn".
public final class LoginViewModel: ViewModel {
    override public class var screen: String { "login" }
    override public class var actions: [ActionSpec] { [ActionSpec("logIn", label: "Log in", fields: ["email", "password"])] }

    public static let invalidCredentials = "Invalid e-mail or password."
    public static let passwordRequired = "Enter your password."

    let accounts: any AccountService

    public init(session: String, accounts: any AccountService) {
        self.accounts = accounts
        super.init(session: session)
    }

    override public func handle(_ intent: IntentInput) throws(IntentRefusal) {
        guard intent.action == "logIn" else { return try super.handle(intent) }
        let email = intent.field("email")
        let password = intent.rawField("password")
        if let problem = AccountRules.emailProblem(email) { return fail(problem, field: "email") }
        if password.isEmpty { return fail(Self.passwordRequired, field: "password") }
        // Longer than any account's: no need to ask the service.
        if password.count > FieldLimits.password { return fail(Self.invalidCredentials, field: "password") }
        load({ () throws(ServiceFailure) -> ScreenPayload in
            let account = try accounts.signIn(email: email, password: password, session: session)
            return .photos(account, notice: "signedIn", "Welcome back, \(account.name).")
        }, message: { failure in
            switch failure {
            case .refused(.invalidCredentials): Self.invalidCredentials
            case .refused(let refusal): PhotosMessages.unexpected(refusal)
            case .unavailable: PhotosMessages.unavailable("log-in service")
            }
        }, field: { $0 == .refused(.invalidCredentials) ? "password" : nil })
    }

    override public func presentation() -> Presentation {
        Presentation([
            .muted("Log in to Photos."),
            .field("email", label: "E-mail", maxLength: FieldLimits.email),
            .field("password", label: "Password", kind: .secret, maxLength: FieldLimits.password),
            .buttons("logIn", "forgotPassword"),
        ])
    }
}
