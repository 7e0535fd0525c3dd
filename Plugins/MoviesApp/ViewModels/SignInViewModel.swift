import AccountKit
import FlowKit
import FlowProtocol

/// Sign in with e-mail and password (`logIn`). Success: account + notice "signedIn"; an
/// unverified account: an error whose data carries notice "unverified" and the e-mail.
public final class SignInViewModel: ViewModel {
    override public class var screen: String { "signin" }
    override public class var actions: [ActionSpec] { [ActionSpec("logIn", label: "Log in", fields: ["email", "password"])] }

    public static let invalidCredentials = "Invalid e-mail or password."
    public static let passwordRequired = "Enter your password."

    let users: any UserService

    public init(session: String, users: any UserService) {
        self.users = users
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
        state = .loading
        do {
            let account = try users.signIn(email: email, password: password, session: session)
            state = .success(.account(account, notice: "signedIn", "Welcome back, \(account.name)."))
        } catch .refused(.unverified) {
            var account = Account()
            account.email = email
            showError(
                "The e-mail \(email) is not verified yet. Verify it with the code we sent you, then sign in.",
                payload: .account(account, notice: "unverified", "Verify your e-mail to sign in."))
        } catch .refused(.invalidCredentials) {
            fail(Self.invalidCredentials, field: "password")
        } catch .refused(.tooManyAttempts) {
            state = .error(CommonMessages.tooManyAttempts)
        } catch .refused(let refusal) {
            state = .error(CommonMessages.unexpected(refusal))
        } catch {
            state = .error(CommonMessages.unavailable("sign-in service"))
        }
    }

    override public func presentation() -> Presentation {
        var alert: [Flowbus_V1_ActionRef] = []
        if case .error = state, data?.notice?.code == "unverified", let email = screenData?.account.email {
            alert.append(.to("verifyEmail", label: "Verify e-mail", values: ["email": email]))
        }
        return Presentation([
            .muted("Sign in to Amor por Filmes e Séries."),
            .field("email", label: "E-mail", maxLength: FieldLimits.email),
            .field("password", label: "Password", kind: .secret, maxLength: FieldLimits.password),
            .buttons("logIn", "register", "forgotPassword"),
        ], alertButtons: alert)
    }
}
