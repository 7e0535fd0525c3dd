import FlowKit
import FlowProtocol
import MoviesApp
import Testing

@Suite struct SignInViewModelTests {
    let users = MockUserService()
    let viewModel: SignInViewModel
    let log: StateLog

    init() {
        viewModel = SignInViewModel(session: "s1", users: users)
        log = StateLog(viewModel)
    }

    func logIn(_ email: String, _ password: String) throws {
        try viewModel.handle(IntentInput(action: "logIn", fields: ["email": email, "password": password], session: "s1"))
    }

    @Test(arguments: [
        ("", "secret123", "Enter your e-mail address."),
        ("   ", "secret123", "Enter your e-mail address."),
        ("ana", "secret123", "\"ana\" is not a valid e-mail address. Type one like name@example.com."),
        ("ana@example", "secret123", "\"ana@example\" is not a valid e-mail address. Type one like name@example.com."),
        ("a@b@c.com", "secret123", "\"a@b@c.com\" is not a valid e-mail address. Type one like name@example.com."),
        ("ana@example.com", "", "Enter your password."),
    ])
    func invalidInputIsAnErrorWithoutCallingTheService(email: String, password: String, message: String) throws {
        try logIn(email, password)
        #expect(log.states == [.error(message)])
        #expect(users.calls.isEmpty)
    }

    @Test func successLoadsThenShowsTheAccountWithNoticeSignedIn() throws {
        users.signInResult = .success(account())
        try logIn(" ana@example.com ", "secret123")
        #expect(users.calls == ["signIn ana@example.com secret123 s1"])
        #expect(log.states.count == 2)
        #expect(log.states.first == .loading)
        #expect(log.states.last?.successNotice == "signedIn")
        let data = try #require(log.states.last?.successData)
        #expect(data.account.email == "ana@example.com")
    }

    @Test func unknownAccountOrWrongPasswordIsOneMessage() throws {
        users.signInResult = .failure(.refused(.invalidCredentials))
        try logIn("ana@example.com", "wrong-password")
        #expect(log.states == [.loading, .error("Invalid e-mail or password.")])
    }

    @Test func tooManyWrongTriesSaysToWait() throws {
        users.signInResult = .failure(.refused(.tooManyAttempts))
        try logIn("ana@example.com", "secret123")
        #expect(log.states == [.loading, .error("Too many wrong tries for this account. Wait a few minutes, then try again.")])
    }

    @Test func anUnverifiedAccountIsAnErrorWhoseDataSaysUnverified() throws {
        users.signInResult = .failure(.refused(.unverified))
        try logIn("ana@example.com", "secret123")
        #expect(log.states.first == .loading)
        let message = try #require(log.states.last?.errorMessage)
        #expect(message.contains("not verified"))
        #expect(log.lastNotice == "unverified")
        #expect(log.lastData?.account.email == "ana@example.com")
        #expect(viewModel.data?.notice?.code == "unverified")
    }

    @Test func anUnavailableServiceSaysToTryAgain() throws {
        users.signInResult = .failure(.unavailable("svc.users did not answer"))
        try logIn("ana@example.com", "secret123")
        #expect(log.states == [.loading, .error("The sign-in service is not available right now. Try again in a moment.")])
    }

    @Test(arguments: ["register", "forgotPassword", "logout"])
    func actionsThatAreNotItsOwnAreRefused(action: String) {
        #expect(throws: IntentRefusal.self) { try viewModel.handle(IntentInput(action: action)) }
        #expect(log.states.isEmpty)
    }

    @Test func appearPublishesTheFirstStateOnceWithItsPresentationAndActions() throws {
        try viewModel.handle(IntentInput(action: "appear"))
        #expect(log.states == [.none], "the first appear publishes the state, so clients get the form")
        try viewModel.handle(IntentInput(action: "appear"))
        #expect(log.states == [.none], "a state already on the bus is not published again")
        #expect(viewModel.offeredActions().map(\.name) == ["logIn"])
        #expect(viewModel.offeredActions().first?.fields == ["email", "password"])
        #expect(viewModel.offeredActions().first?.service == "vm.signin")
        let fields = viewModel.presentation().components.compactMap { component -> String? in
            if case .field(let field)? = component.component { field.name } else { nil }
        }
        #expect(fields == ["email", "password"])
    }
}
