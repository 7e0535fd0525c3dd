import AccountKit
import FlowKit
import FlowProtocol
import PhotosApp
import Testing

/// Log in, Create account and Forgot password against mock services: every rule with its
/// message before any service call, then loading → success with the notice coordinators branch on.
@Suite struct LoginViewModelTests {
    let accounts = MockAccountService()
    let viewModel: LoginViewModel
    let log: StateLog

    init() {
        viewModel = LoginViewModel(session: "s1", accounts: accounts)
        log = StateLog(viewModel)
    }

    func logIn(_ email: String, _ password: String) throws {
        try viewModel.handle(IntentInput(action: "logIn", fields: ["email": email, "password": password], session: "s1"))
    }

    @Test(arguments: [
        ("", "photos123", "Enter your e-mail address.", "email"),
        ("   ", "photos123", "Enter your e-mail address.", "email"),
        ("ana", "photos123", "\"ana\" is not a valid e-mail address. Type one like name@example.com.", "email"),
        ("ana@example", "photos123", "\"ana@example\" is not a valid e-mail address. Type one like name@example.com.", "email"),
        ("ana@example.com", "", "Enter your password.", "password"),
        ("ana@example.com", String(repeating: "x", count: 129), "Invalid e-mail or password.", "password"),
        (String(repeating: "a", count: 250) + "@b.com", "photos123", "The e-mail address is too long: use at most 254 characters.", "email"),
    ])
    func invalidInputIsAnErrorWithoutCallingTheService(email: String, password: String, message: String, field: String) throws {
        try logIn(email, password)
        #expect(log.states == [.error(message)])
        // The client puts the focus there once the error is read (issue 17).
        #expect(viewModel.errorField == field)
        #expect(accounts.calls.isEmpty)
    }

    @Test func successShowsTheAccountWithNoticeSignedIn() throws {
        accounts.signInResult = .success(makeAccount())
        try logIn(" ana@example.com ", "photos123")
        #expect(accounts.calls == ["signIn ana@example.com photos123 s1"])
        #expect(log.states.first == .loading)
        #expect(log.states.count == 2)
        #expect(log.states.last?.successNotice == "signedIn")
        #expect(log.states.last?.success(Photos_V1_Account.self)?.email == "ana@example.com")
        #expect(log.lastNoticeText == "Welcome back, Ana Lima.")
    }

    @Test func aWrongPasswordOrUnknownAccountIsTheMoviesAppsMessage() throws {
        accounts.signInResult = .failure(.refused(.invalidCredentials))
        try logIn("ana@example.com", "wrong-password")
        #expect(log.states == [.loading, .error("Invalid e-mail or password.")])
        #expect(viewModel.errorField == "password")
    }

    @Test func anUnavailableServiceSaysToTryAgain() throws {
        accounts.signInResult = .failure(.unavailable("svc.accounts did not answer"))
        try logIn("ana@example.com", "photos123")
        #expect(log.states == [.loading, .error("The log-in service is not available right now. Try again in a moment.")])
    }

    @Test(arguments: ["forgotPassword", "createAccount", "signIn"])
    func actionsThatAreNotItsOwnAreRefused(action: String) {
        #expect(throws: IntentRefusal.self) { try viewModel.handle(IntentInput(action: action)) }
        #expect(log.states.isEmpty)
    }

    @Test func itsFormPublishesTheFieldLimitsAndOffersForgotPassword() throws {
        try viewModel.handle(IntentInput(action: "appear"))
        #expect(log.states == [.none])
        let presentation = viewModel.presentation()
        #expect(presentation.fields.map(\.name) == ["email", "password"])
        #expect(presentation.fields.map(\.maxLength) == [254, 128])
        #expect(presentation.fields.last?.kind == .secret)
        #expect(presentation.buttons == ["logIn", "forgotPassword"])
        #expect(viewModel.offeredActions().map(\.name) == ["logIn"])
        #expect(viewModel.offeredActions().first?.service == "vm.login")
    }
}

@Suite struct CreateAccountViewModelTests {
    let accounts = MockAccountService()
    let viewModel: CreateAccountViewModel
    let log: StateLog

    init() {
        viewModel = CreateAccountViewModel(session: "s1", accounts: accounts)
        log = StateLog(viewModel)
    }

    func create(name: String = "Ana Lima", email: String = "ana@example.com", password: String = "secret123", confirmation: String? = nil) throws {
        try viewModel.handle(IntentInput(action: "createAccount", fields: [
            "name": name, "email": email, "password": password, "passwordConfirmation": confirmation ?? password,
        ], session: "s1"))
    }

    /// Every field wrong at once: the message is the first field's, in the form's order.
    @Test func rulesAreCheckedInTheFormsOrder() throws {
        try create(name: "", email: "nope", password: "short", confirmation: "other")
        try create(name: "Ana", email: "nope", password: "short", confirmation: "other")
        try create(name: "Ana", email: "ana@example.com", password: "short", confirmation: "other")
        try create(name: "Ana", email: "ana@example.com", password: "secret123", confirmation: "")
        try create(name: "Ana", email: "ana@example.com", password: "secret123", confirmation: "secret124")
        #expect(log.states == [
            .error("Enter your name."),
            .error("\"nope\" is not a valid e-mail address. Type one like name@example.com."),
            .error("The password is too short: use at least 8 characters."),
            .error("Type the password again to confirm it."),
            .error("The confirmation does not match the password. Type the same password twice."),
        ])
        #expect(accounts.calls.isEmpty)
    }

    @Test(arguments: [
        ("", "", "", "Enter your name."),
        ("   ", "ana@example.com", "secret123", "Enter your name."),
        ("Ana", "", "secret123", "Enter your e-mail address."),
        ("Ana", "ana@example.com", "", "Enter a password."),
    ])
    func eachRuleHasAccountKitsMessage(name: String, email: String, password: String, message: String) throws {
        try create(name: name, email: email, password: password)
        #expect(log.states == [.error(message)])
        #expect(accounts.calls.isEmpty)
    }

    @Test func theMessagesAreAccountKits() {
        #expect(CreateAccountViewModelTests.first(email: "x") == AccountRules.emailProblem("x"))
        #expect(CreateAccountViewModelTests.first(password: "short") == AccountRules.newPasswordProblem("short", confirmation: "short"))
    }

    static func first(name: String = "Ana", email: String = "ana@example.com", password: String = "secret123") -> String? {
        let viewModel = CreateAccountViewModel(session: "s1", accounts: MockAccountService())
        let log = StateLog(viewModel)
        try? viewModel.handle(IntentInput(action: "createAccount", fields: [
            "name": name, "email": email, "password": password, "passwordConfirmation": password,
        ]))
        return log.states.last?.errorMessage
    }

    @Test func tooLongFieldsSayTheirLimit() throws {
        try create(name: String(repeating: "a", count: 81))
        try create(email: String(repeating: "a", count: 250) + "@example.com")
        try create(password: String(repeating: "p", count: 129))
        #expect(log.states.compactMap(\.errorMessage) == [
            "The name is too long: use at most 80 characters.",
            "The e-mail address is too long: use at most 254 characters.",
            "The password is too long: use at most 128 characters.",
        ])
        #expect(accounts.calls.isEmpty)
    }

    @Test func successRegistersSignsTheSessionInAndSaysAccountCreated() throws {
        accounts.registerResult = .success(makeAccount())
        try create(name: " Ana Lima ", email: " ana@example.com ", password: " secret123 ")
        #expect(accounts.calls == ["register Ana Lima ana@example.com  secret123  s1"], "the password keeps its spaces")
        #expect(log.states.first == .loading)
        #expect(log.states.last?.successNotice == "accountCreated")
        #expect(log.states.last?.success(Photos_V1_Account.self)?.name == "Ana Lima")
    }

    @Test func aTakenEmailSaysToLogIn() throws {
        accounts.registerResult = .failure(.refused(.emailTaken))
        try create()
        #expect(log.states == [.loading, .error("An account already exists for ana@example.com. Log in instead, or use another e-mail.")])
    }

    @Test func anUnavailableServiceSaysToTryAgain() throws {
        accounts.registerResult = .failure(.unavailable("down"))
        try create()
        #expect(log.states.last == .error("The account service is not available right now. Try again in a moment."))
    }

    @Test func itsFormHasFourFieldsInOrderWithTheirLimits() {
        let presentation = viewModel.presentation()
        #expect(presentation.fields.map(\.name) == ["name", "email", "password", "passwordConfirmation"])
        #expect(presentation.fields.map(\.maxLength) == [80, 254, 128, 128])
        #expect(CreateAccountViewModel.actions.first?.fields == ["name", "email", "password", "passwordConfirmation"])
        #expect(presentation.buttons == ["createAccount"])
    }

    @Test func withTheInMemoryServicesTheNewAccountIsSignedIn() throws {
        let services = try makeServices()
        let viewModel = CreateAccountViewModel(session: "s9", accounts: services.accounts)
        let log = StateLog(viewModel)
        try viewModel.handle(IntentInput(action: "createAccount", fields: [
            "name": "Rita", "email": "rita@example.com", "password": "secret123", "passwordConfirmation": "secret123",
        ], session: "s9"))
        #expect(log.states.last?.successNotice == "accountCreated")
        #expect(try services.accounts.account(forSession: "s9").email == "rita@example.com")
    }
}

@Suite struct ForgotPasswordViewModelTests {
    let accounts = MockAccountService()
    let viewModel: ForgotPasswordViewModel
    let log: StateLog

    init() {
        viewModel = ForgotPasswordViewModel(session: "s1", accounts: accounts)
        log = StateLog(viewModel)
    }

    func send(_ email: String) throws {
        try viewModel.handle(IntentInput(action: "send", fields: ["email": email]))
    }

    @Test func anInvalidEmailIsAnErrorWithoutCallingTheService() throws {
        try send("")
        try send("not-an-address")
        #expect(log.states == [
            .error("Enter your e-mail address."),
            .error("\"not-an-address\" is not a valid e-mail address. Type one like name@example.com."),
        ])
        #expect(accounts.calls.isEmpty)
    }

    @Test func successSaysResetSentAndThatASixDigitCodeWasMailed() throws {
        try send("demo@photos.dev")
        #expect(accounts.calls == ["requestPasswordReset demo@photos.dev"])
        #expect(log.states.first == .loading)
        #expect(log.states.last?.successNotice == "resetSent")
        #expect(log.lastNoticeText.contains("6-digit code"))
        #expect(log.lastNoticeText.contains("demo@photos.dev"))
    }

    @Test func anUnavailableServiceSaysToTryAgain() throws {
        accounts.resetResult = .failure(.unavailable("down"))
        try send("demo@photos.dev")
        #expect(log.states.last == .error("The password reset service is not available right now. Try again in a moment."))
    }

    @Test func withTheInMemoryServicesTheCodeIsInTheOutbox() throws {
        let services = try makeServices()
        let viewModel = ForgotPasswordViewModel(session: "s1", accounts: services.accounts)
        try viewModel.handle(IntentInput(action: "send", fields: ["email": "demo@photos.dev"]))
        #expect(code(in: try services.mail.outbox(email: "demo@photos.dev").last) != nil)
    }
}
