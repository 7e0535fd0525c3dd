import AccountKit
import FlowKit
import FlowProtocol

/// Creates an account (`createAccount`): checks the fields in the form's order — name, e-mail,
/// password, confirmation — with AccountKit's messages, then registers and signs the session in
/// (no e-mail verification). Success: the account with notice "accountCreated".
public final class CreateAccountViewModel: ViewModel {
    override public class var screen: String { "createaccount" }
    override public class var actions: [ActionSpec] {
        [ActionSpec("createAccount", label: "Create account", fields: ["name", "email", "password", "passwordConfirmation"])]
    }

    public static let nameRequired = "Enter your name."

    let accounts: any AccountService

    public init(session: String, accounts: any AccountService) {
        self.accounts = accounts
        super.init(session: session)
    }

    /// The first rule the form breaks, in the order of its fields: the field and what to say; nil when none is.
    static func problem(name: String, email: String, password: String, confirmation: String) -> (field: String, message: String)? {
        if name.isEmpty { return ("name", nameRequired) }
        if name.count > FieldLimits.name { return ("name", PhotosMessages.tooLong("name", limit: FieldLimits.name)) }
        if let problem = AccountRules.emailProblem(email) { return ("email", problem) }
        if let fault = AccountRules.newPasswordFault(password, confirmation: confirmation) {
            return (fault.field == .password ? "password" : "passwordConfirmation", fault.message)
        }
        return nil
    }

    override public func handle(_ intent: IntentInput) throws(IntentRefusal) {
        guard intent.action == "createAccount" else { return try super.handle(intent) }
        let name = intent.field("name")
        let email = intent.field("email")
        let password = intent.rawField("password")
        if let problem = Self.problem(name: name, email: email, password: password, confirmation: intent.rawField("passwordConfirmation")) {
            return fail(problem.message, field: problem.field)
        }
        load({ () throws(ServiceFailure) -> ScreenPayload in
            let account = try accounts.register(name: name, email: email, password: password, session: session)
            return .photos(account, notice: "accountCreated", "Welcome, \(account.name): your account is ready.")
        }, message: { failure in
            switch failure {
            case .refused(.emailTaken): "An account already exists for \(email). Log in instead, or use another e-mail."
            // The rules above match the service's; these answer a service with stricter ones.
            case .refused(let refusal) where [.invalidEmail, .passwordTooShort, .nameMissing].contains(refusal): refusal.message
            case .refused(let refusal): PhotosMessages.unexpected(refusal)
            case .unavailable: PhotosMessages.unavailable("account service")
            }
        })
    }

    override public func presentation() -> Presentation {
        Presentation([
            .field("name", label: "Name", maxLength: FieldLimits.name),
            .field("email", label: "E-mail", maxLength: FieldLimits.email),
            .field("password", label: "Password", kind: .secret, maxLength: FieldLimits.password,
                   hint: "at least \(AccountRules.minimumPasswordLength) characters"),
            .field("passwordConfirmation", label: "Confirm", kind: .secret, maxLength: FieldLimits.password),
            .buttons("createAccount"),
        ])
    }
}
