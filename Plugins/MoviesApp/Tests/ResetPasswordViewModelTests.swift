import FlowKit
import FlowProtocol
import MoviesApp
import Testing

/// Issue 17, bug 10: Choose a new password, with the code Forgot password mailed.
@Suite struct ResetPasswordViewModelTests {
    let users = MockUserService()
    let viewModel: ResetPasswordViewModel
    let log: StateLog

    init() {
        viewModel = ResetPasswordViewModel(session: "s1", users: users)
        log = StateLog(viewModel)
    }

    func reset(code: String = "123456", password: String = "another123", confirmation: String? = nil) throws {
        try viewModel.handle(IntentInput(
            action: "setPassword", fields: ["code": code, "password": password, "passwordConfirmation": confirmation ?? password],
            params: ["email": "ana@example.com"]))
    }

    @Test(arguments: [
        ("", "another123", "another123", "Enter the 6-digit code we mailed to ana@example.com.", "code"),
        ("12345", "another123", "another123", "The code has 6 digits. Check the mail we sent to ana@example.com and type it again.", "code"),
        ("123456", "", "", "Enter a password.", "password"),
        ("123456", "short", "short", "The password is too short: use at least 8 characters.", "password"),
        ("123456", String(repeating: "p", count: 129), "", "The password is too long: use at most 128 characters.", "password"),
        ("123456", "another123", "", "Type the password again to confirm it.", "passwordConfirmation"),
        ("123456", "another123", "another124", "The confirmation does not match the password. Type the same password twice.", "passwordConfirmation"),
    ])
    func everyRuleIsCheckedBeforeTheServiceAndNamesItsField(code: String, password: String, confirmation: String, message: String, field: String) throws {
        try reset(code: code, password: password, confirmation: confirmation)
        #expect(log.states == [.error(message)])
        #expect(viewModel.errorField == field)
        #expect(users.calls.isEmpty)
    }

    @Test func theCodeAndNewPasswordGoToTheService() throws {
        try reset()
        #expect(users.calls == ["resetPassword ana@example.com 123456 another123"])
        #expect(log.states.first == .loading)
        #expect(log.states.last?.successNotice == "passwordReset")
        #expect(viewModel.errorField.isEmpty)
    }

    @Test(arguments: [
        (ServiceFailure.refused(.wrongToken), "That code is not right. Check the latest mail we sent to ana@example.com, or choose Send a new code.", "code"),
        (.refused(.expiredToken), "That code has expired. Choose Send a new code, then type the new one here.", "code"),
        (.refused(.tooManyAttempts), "Too many wrong tries for this account. Wait a few minutes, then try again.", ""),
        (.unavailable("down"), "The password reset service is not available right now. Try again in a moment.", ""),
    ])
    func refusalsSayWhatToDo(failure: ServiceFailure, message: String, field: String) throws {
        users.resetPasswordResult = .failure(failure)
        try reset()
        #expect(log.states == [.loading, .error(message)])
        #expect(viewModel.errorField == field)
    }

    @Test func resendMailsANewCodeAndSaysSo() throws {
        try viewModel.handle(IntentInput(action: "resend", params: ["email": "ana@example.com"]))
        #expect(users.calls == ["requestPasswordReset ana@example.com"])
        #expect(log.states.last?.successNotice == "resetSent")
        #expect(viewModel.presentation().components.contains { $0.notice.text.hasPrefix("We mailed a new code to ana@example.com") })
    }

    @Test func withoutTheEmailParameterTheIntentIsRefused() {
        #expect(throws: IntentRefusal.self) { try viewModel.handle(IntentInput(action: "setPassword", fields: ["code": "123456"])) }
    }
}
