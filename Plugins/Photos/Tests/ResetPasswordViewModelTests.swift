import FlowKit
import FlowProtocol
import PhotosApp
import Testing

/// Issue 17, bug 10: the mailed reset code had no screen; Choose a new password takes it.
@Suite struct PhotosResetPasswordViewModelTests {
    static let params = ["email": "demo@photos.dev"]

    @Test func theMailedCodeSetsANewPasswordThatLogsIn() throws {
        let services = try makeServices()
        try ForgotPasswordViewModel(session: "s1", accounts: services.accounts)
            .handle(IntentInput(action: "send", fields: ["email": "demo@photos.dev"]))
        let mailed = try #require(code(in: try services.mail.outbox(email: "demo@photos.dev").last))
        let viewModel = ResetPasswordViewModel(session: "s1", accounts: services.accounts)
        let log = StateLog(viewModel)
        try viewModel.handle(IntentInput(
            action: "setPassword", fields: ["code": mailed, "password": "another123", "passwordConfirmation": "another123"], params: Self.params))
        #expect(log.states.last?.successNotice == "passwordReset", "\(log.states)")
        #expect(throws: ServiceFailure.refused(.invalidCredentials)) { try services.accounts.signIn(email: "demo@photos.dev", password: "photos123", session: "s2") }
        #expect(try services.accounts.signIn(email: "demo@photos.dev", password: "another123", session: "s2").email == "demo@photos.dev")
    }

    @Test func aBadFormIsRefusedBeforeTheServiceNamingItsField() throws {
        let accounts = MockAccountService()
        let viewModel = ResetPasswordViewModel(session: "s1", accounts: accounts)
        try viewModel.handle(IntentInput(
            action: "setPassword", fields: ["code": "12a456", "password": "another123", "passwordConfirmation": "another123"], params: Self.params))
        #expect(viewModel.state == .error("The code has 6 digits. Check the mail we sent to demo@photos.dev and type it again."))
        #expect(viewModel.errorField == "code")
        try viewModel.handle(IntentInput(
            action: "setPassword", fields: ["code": "123456", "password": "another123", "passwordConfirmation": "another12"], params: Self.params))
        #expect(viewModel.errorField == "passwordConfirmation")
        #expect(accounts.calls.isEmpty)
    }

    @Test(arguments: [
        (ServiceFailure.refused(.wrongCode), Refusal.wrongCode.message, "code"),
        (.refused(.expiredCode), Refusal.expiredCode.message, "code"),
        (.unavailable("down"), "The password reset service is not available right now. Try again in a moment.", ""),
    ])
    func refusalsSayWhatToDo(failure: ServiceFailure, message: String, field: String) throws {
        let accounts = MockAccountService()
        accounts.resetPasswordResult = .failure(failure)
        let viewModel = ResetPasswordViewModel(session: "s1", accounts: accounts)
        try viewModel.handle(IntentInput(
            action: "setPassword", fields: ["code": "123456", "password": "another123", "passwordConfirmation": "another123"], params: Self.params))
        #expect(viewModel.state == .error(message))
        #expect(viewModel.errorField == field)
    }
}
