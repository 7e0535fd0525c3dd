import FlowKit
import FlowProtocol
import MoviesApp
import Testing

@Suite struct ChangePasswordViewModelTests {
    let users = MockUserService()
    let viewModel: ChangePasswordViewModel
    let log: StateLog

    init() {
        viewModel = ChangePasswordViewModel(session: "s1", users: users)
        log = StateLog(viewModel)
    }

    func change(current: String = "flowbus123", password: String = "another123", confirmation: String = "another123") throws {
        try viewModel.handle(IntentInput(action: "change", fields: ["current": current, "password": password, "passwordConfirmation": confirmation]))
    }

    @Test(arguments: [
        ("", "another123", "another123", "Enter your current password."),
        ("flowbus123", "", "", "Enter a password."),
        ("flowbus123", "1234567", "1234567", "The password is too short: use at least 8 characters."),
        ("flowbus123", "another123", "", "Type the password again to confirm it."),
        ("flowbus123", "another123", "another124", "The confirmation does not match the password. Type the same password twice."),
    ])
    func everyRuleHasItsMessage(current: String, password: String, confirmation: String, message: String) throws {
        try change(current: current, password: password, confirmation: confirmation)
        #expect(log.states == [.error(message)])
        #expect(users.calls.isEmpty)
    }

    @Test func aWrongCurrentPasswordIsAnError() throws {
        users.changePasswordResult = .failure(.refused(.wrongPassword))
        try change()
        #expect(log.states == [.loading, .error("The current password is not right. Type it again.")])
    }

    @Test func successSaysPasswordChanged() throws {
        try change()
        #expect(users.calls == ["changePassword s1 flowbus123 another123"])
        #expect(log.states.first == .loading)
        #expect(log.states.last?.successNotice == "passwordChanged")
    }
}
