import PhotosApp
import Testing

@Suite struct PasswordResetTests {
    let clock = TestClock()
    let services: PhotosServices

    init() throws {
        services = try makeServices(clock: clock, codeLifetime: 600)
    }

    var accounts: any AccountService { services.accounts }

    func lastCode(_ email: String = "demo@photos.dev") throws -> String {
        try #require(code(in: try services.mail.outbox(email: email).last))
    }

    @Test func aResetMailsASixDigitCode() throws {
        try accounts.requestPasswordReset(email: "Demo@Photos.dev")
        let mails = try services.mail.outbox(email: "demo@photos.dev")
        #expect(mails.count == 1)
        #expect(mails[0].to == "demo@photos.dev")
        #expect(mails[0].subject == "Your Photos password reset code")
        #expect(mails[0].body.contains("valid for 10 minutes"))
        #expect(try lastCode().count == 6)
    }

    @Test func anUnknownAddressGetsTheSameAnswerAndNoMail() throws {
        try accounts.requestPasswordReset(email: "nobody@example.com")
        #expect(try services.mail.outbox(email: "nobody@example.com").isEmpty)
        #expect(throws: ServiceFailure.refused(.wrongCode)) {
            try accounts.resetPassword(email: "nobody@example.com", code: "123456", newPassword: "another123")
        }
    }

    @Test func theRightCodeSetsTheNewPasswordOnce() throws {
        _ = try accounts.signIn(email: "demo@photos.dev", password: "photos123", session: "s1")
        try accounts.requestPasswordReset(email: "demo@photos.dev")
        let code = try lastCode()
        clock.advance(by: 600)
        try accounts.resetPassword(email: "DEMO@photos.dev", code: code, newPassword: "another123")
        #expect(throws: ServiceFailure.refused(.notSignedIn)) { try accounts.account(forSession: "s1") }
        #expect(throws: ServiceFailure.refused(.invalidCredentials)) { try accounts.signIn(email: "demo@photos.dev", password: "photos123", session: "s2") }
        #expect(try accounts.signIn(email: "demo@photos.dev", password: "another123", session: "s2").name == "Demo Photographer")
        #expect(throws: ServiceFailure.refused(.wrongCode)) {
            try accounts.resetPassword(email: "demo@photos.dev", code: code, newPassword: "third-one1")
        }
    }

    @Test func aWrongCodeIsRefusedAndTheRightOneStillWorks() throws {
        try accounts.requestPasswordReset(email: "demo@photos.dev")
        let code = try lastCode()
        #expect(throws: ServiceFailure.refused(.wrongCode)) {
            try accounts.resetPassword(email: "demo@photos.dev", code: otherCode(than: code), newPassword: "another123")
        }
        #expect(throws: ServiceFailure.refused(.wrongCode)) { try accounts.resetPassword(email: "demo@photos.dev", code: "", newPassword: "another123") }
        try accounts.resetPassword(email: "demo@photos.dev", code: " \(code) ", newPassword: "another123")
    }

    @Test func aCodeExpiresAfterItsLifetime() throws {
        try accounts.requestPasswordReset(email: "demo@photos.dev")
        let code = try lastCode()
        clock.advance(by: 601)
        #expect(throws: ServiceFailure.refused(.expiredCode)) {
            try accounts.resetPassword(email: "demo@photos.dev", code: code, newPassword: "another123")
        }
        // A wrong code says wrong, not expired: expiry is only told to whoever holds the code.
        #expect(throws: ServiceFailure.refused(.wrongCode)) {
            try accounts.resetPassword(email: "demo@photos.dev", code: otherCode(than: code), newPassword: "another123")
        }
        #expect(try accounts.signIn(email: "demo@photos.dev", password: "photos123", session: "s1").email == "demo@photos.dev")
    }

    @Test func aNewRequestReplacesTheOldCode() throws {
        try accounts.requestPasswordReset(email: "demo@photos.dev")
        let first = try lastCode()
        clock.advance(by: 500)
        try accounts.requestPasswordReset(email: "demo@photos.dev")
        let second = try lastCode()
        #expect(try services.mail.outbox(email: "demo@photos.dev").count == 2)
        clock.advance(by: 500)
        if first != second {
            #expect(throws: ServiceFailure.refused(.wrongCode)) {
                try accounts.resetPassword(email: "demo@photos.dev", code: first, newPassword: "another123")
            }
        }
        try accounts.resetPassword(email: "demo@photos.dev", code: second, newPassword: "another123")
    }

    @Test func tooManyWrongCodesVoidTheCode() throws {
        try accounts.requestPasswordReset(email: "demo@photos.dev")
        let code = try lastCode()
        for _ in 0..<InMemoryAccountService.maximumWrongCodes {
            #expect(throws: ServiceFailure.refused(.wrongCode)) {
                try accounts.resetPassword(email: "demo@photos.dev", code: otherCode(than: code), newPassword: "another123")
            }
        }
        // The account is locked for a minute: not even the right code is tried.
        #expect(throws: ServiceFailure.refused(.tooManyAttempts)) {
            try accounts.resetPassword(email: "demo@photos.dev", code: code, newPassword: "another123")
        }
        clock.advance(by: 61)
        // And the code itself is void.
        #expect(throws: ServiceFailure.refused(.wrongCode)) {
            try accounts.resetPassword(email: "demo@photos.dev", code: code, newPassword: "another123")
        }
        try accounts.requestPasswordReset(email: "demo@photos.dev")
        try accounts.resetPassword(email: "demo@photos.dev", code: try lastCode(), newPassword: "another123")
    }

    @Test func theNewPasswordKeepsTheRulesAndDoesNotUseTheCodeUp() throws {
        try accounts.requestPasswordReset(email: "demo@photos.dev")
        let code = try lastCode()
        #expect(throws: ServiceFailure.refused(.passwordTooShort)) {
            try accounts.resetPassword(email: "demo@photos.dev", code: code, newPassword: "short")
        }
        try accounts.resetPassword(email: "demo@photos.dev", code: code, newPassword: "long-enough")
    }

    @Test func theLifetimeIsConfigurable() throws {
        let services = try makeServices(clock: clock, codeLifetime: 30)
        try services.accounts.requestPasswordReset(email: "demo@photos.dev")
        let mail = try #require(try services.mail.outbox(email: "demo@photos.dev").last)
        #expect(mail.body.contains("valid for 30 seconds"))
        let sent = try #require(code(in: mail))
        clock.advance(by: 31)
        #expect(throws: ServiceFailure.refused(.expiredCode)) {
            try services.accounts.resetPassword(email: "demo@photos.dev", code: sent, newPassword: "another123")
        }
    }
}
