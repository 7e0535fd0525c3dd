import FlowKit
import FlowProtocol
import MoviesApp
import Testing

@Suite struct ForgotPasswordViewModelTests {
    let users = MockUserService()
    let viewModel: ForgotPasswordViewModel
    let log: StateLog

    init() {
        viewModel = ForgotPasswordViewModel(session: "s1", users: users)
        log = StateLog(viewModel)
    }

    @Test func anOverlongEmailIsRefusedBeforeTheService() throws {
        let long = String(repeating: "a", count: 250) + "@example.com"
        try viewModel.handle(IntentInput(action: "send", fields: ["email": long]))
        #expect(log.states == [.error("The e-mail address is too long: use at most 254 characters.")])
        #expect(users.calls.isEmpty)
    }

    @Test(arguments: [("", "Enter your e-mail address."), ("ana@", "\"ana@\" is not a valid e-mail address. Type one like name@example.com.")])
    func anInvalidEmailIsAnError(email: String, message: String) throws {
        try viewModel.handle(IntentInput(action: "send", fields: ["email": email]))
        #expect(log.states == [.error(message)])
        #expect(viewModel.errorField == "email")
        #expect(users.calls.isEmpty)
    }

    @Test func sendAsksForAResetAndSaysResetSent() throws {
        try viewModel.handle(IntentInput(action: "send", fields: ["email": "ana@example.com"]))
        #expect(users.calls == ["requestPasswordReset ana@example.com"])
        #expect(log.states.first == .loading)
        #expect(log.states.last?.successNotice == "resetSent")
        // The coordinator opens Choose a new password for this address.
        #expect(viewModel.shown(ScreenData.self)?.account.email == "ana@example.com")
        #expect(viewModel.data?.notice?.text == ForgotPasswordViewModel.sentText(to: "ana@example.com"))
    }

    @Test func anUnavailableServiceIsAnError() throws {
        users.resetResult = .failure(.unavailable("down"))
        try viewModel.handle(IntentInput(action: "send", fields: ["email": "ana@example.com"]))
        #expect(log.states == [.loading, .error("The password reset service is not available right now. Try again in a moment.")])
    }
}
