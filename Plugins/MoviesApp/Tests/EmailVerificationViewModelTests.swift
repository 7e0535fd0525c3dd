import FlowKit
import FlowProtocol
import Foundation
import MoviesApp
import Testing

@Suite struct EmailVerificationViewModelTests {
    let users = MockUserService()
    let viewModel: EmailVerificationViewModel
    let log: StateLog

    init() {
        viewModel = EmailVerificationViewModel(session: "s1", users: users)
        log = StateLog(viewModel)
    }

    func verify(_ token: String, email: String = "ana@example.com") throws {
        try viewModel.handle(IntentInput(action: "verify", fields: ["token": token], params: ["email": email]))
    }

    @Test func withoutTheEmailParameterTheIntentIsRefused() {
        #expect(throws: IntentRefusal.self) { try viewModel.handle(IntentInput(action: "verify", fields: ["token": "123456"])) }
        #expect(throws: IntentRefusal.self) { try viewModel.handle(IntentInput(action: "resend")) }
        #expect(throws: IntentRefusal.self) { try viewModel.handle(IntentInput(action: "signUp", params: ["email": "a@b.co"])) }
        #expect(log.states.isEmpty)
    }

    @Test(arguments: [
        ("", "Enter the 6-digit code we sent to ana@example.com."),
        ("12345", "The code has 6 digits. Check the e-mail we sent to ana@example.com and type it again."),
        ("12a456", "The code has 6 digits. Check the e-mail we sent to ana@example.com and type it again."),
    ])
    func aMalformedTokenIsAnErrorWithoutCallingTheService(token: String, message: String) throws {
        try verify(token)
        #expect(log.states == [.error(message)])
        #expect(users.calls.isEmpty)
    }

    @Test func aWrongTokenIsAnError() throws {
        users.verifyResult = .failure(.refused(.wrongToken))
        try verify("123456")
        #expect(log.states == [.loading, .error("That code is not right. Check the latest e-mail we sent to ana@example.com, or choose Resend code for a new one.")])
    }

    @Test func anExpiredTokenSaysToResend() throws {
        users.verifyResult = .failure(.refused(.expiredToken))
        try verify("123456")
        #expect(log.states.first == .loading)
        #expect(log.states.last?.errorMessage?.contains("Resend") == true)
    }

    @Test func successVerifiesAndSignsTheSessionIn() throws {
        users.verifyResult = .success(account())
        try verify("123456")
        #expect(users.calls == ["verify ana@example.com 123456 s1"])
        #expect(log.states.first == .loading)
        #expect(log.states.last?.successNotice == "verified")
        #expect(log.states.last?.successData?.account.email == "ana@example.com")
    }

    @Test func resendMailsANewToken() throws {
        try viewModel.handle(IntentInput(action: "resend", params: ["email": "ana@example.com"]))
        #expect(users.calls == ["resendToken ana@example.com"])
        #expect(log.states.first == .loading)
        #expect(log.states.last?.successNotice == "verificationSent")
    }

    /// The real in-memory user service with a hand-moved clock: the view model sees the expiry.
    @Test func aTokenOlderThanItsLifetimeExpiresThenAResentOneWorks() throws {
        let clock = TestClock()
        let services = try makeInMemoryServices(clock: clock, tokenLifetime: 600)
        _ = try services.users.register(registration())
        let viewModel = EmailVerificationViewModel(session: "s9", users: services.users)
        let log = StateLog(viewModel)
        let first = try #require(token(in: try services.mail.outbox(email: "ana@example.com").last))
        clock.advance(by: 601)
        try viewModel.handle(IntentInput(action: "verify", fields: ["token": first], params: ["email": "ana@example.com"]))
        #expect(log.states.last?.errorMessage == "That code has expired. Choose Resend code to get a new one, then type it here.")
        try viewModel.handle(IntentInput(action: "resend", params: ["email": "ana@example.com"]))
        let second = try #require(token(in: try services.mail.outbox(email: "ana@example.com").last))
        clock.advance(by: 599)
        try viewModel.handle(IntentInput(action: "verify", fields: ["token": second], params: ["email": "ana@example.com"]))
        #expect(log.states.last?.successNotice == "verified")
        #expect(try services.users.account(forSession: "s9").verified)
    }
}
