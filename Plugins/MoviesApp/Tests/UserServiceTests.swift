import AccountKit
import FlowKit
import Foundation
@testable import MoviesApp
import Testing

@Suite struct UserServiceTests {
    let clock = TestClock()
    let services: AppServices

    init() throws {
        services = try makeInMemoryServices(clock: clock)
    }

    var users: any UserService { services.users }

    func lastToken(_ email: String) throws -> String {
        try #require(token(in: try services.mail.outbox(email: email).last))
    }

    @Test func registerCreatesAnUnverifiedAccountAndMailsASixDigitToken() throws {
        let account = try users.register(registration("Ana@Example.com"))
        #expect(account.email == "ana@example.com")
        #expect(!account.verified)
        #expect(account.genres == ["drama"])
        let mails = try services.mail.outbox(email: "ana@example.com")
        #expect(mails.count == 1)
        #expect(try lastToken("ana@example.com").count == 6)
        #expect(throws: ServiceFailure.refused(.emailTaken)) { try users.register(registration("ANA@example.com")) }
        #expect(throws: ServiceFailure.refused(.emailTaken)) { try users.register(registration(InMemoryUserService.demoEmail)) }
    }

    @Test func signInRefusesUnknownWrongAndUnverified() throws {
        _ = try users.register(registration())
        #expect(throws: ServiceFailure.refused(.invalidCredentials)) { try users.signIn(email: "nobody@example.com", password: "secret123", session: "s1") }
        #expect(throws: ServiceFailure.refused(.invalidCredentials)) { try users.signIn(email: "ana@example.com", password: "wrong-one", session: "s1") }
        #expect(throws: ServiceFailure.refused(.unverified)) { try users.signIn(email: "ana@example.com", password: "secret123", session: "s1") }
        #expect(throws: ServiceFailure.refused(.notSignedIn)) { try users.account(forSession: "s1") }
    }

    @Test func wrongTokensLockVerificationPerAccountAndPerSession() throws {
        _ = try users.register(registration())
        let right = try lastToken("ana@example.com")
        let wrong = right == "000000" ? "111111" : "000000"
        for _ in 0..<5 {
            #expect(throws: ServiceFailure.refused(.wrongToken)) { try users.verify(email: "ana@example.com", token: wrong, session: "probe") }
        }
        // Locked: even the right code is refused now, from any session, so guessing stops at five.
        #expect(throws: ServiceFailure.refused(.tooManyAttempts)) { try users.verify(email: "ana@example.com", token: right, session: "probe") }
        #expect(throws: ServiceFailure.refused(.tooManyAttempts)) { try users.verify(email: "ana@example.com", token: right, session: "other") }
        // The probing session is locked for other accounts too (its password guesses as well).
        #expect(throws: ServiceFailure.refused(.tooManyAttempts)) {
            try users.signIn(email: InMemoryUserService.demoEmail, password: InMemoryUserService.demoPassword, session: "probe")
        }
        clock.advance(by: 61)
        #expect(try users.verify(email: "ana@example.com", token: right, session: "other").verified)
    }

    @Test func wrongPasswordsLockSignInThenTheLockoutDoubles() throws {
        let demo = InMemoryUserService.demoEmail
        for round in 0..<2 {
            for index in 0..<5 {
                #expect(throws: ServiceFailure.refused(.invalidCredentials)) { try users.signIn(email: demo, password: "guess-\(round)-\(index)", session: "s\(index)") }
            }
            #expect(throws: ServiceFailure.refused(.tooManyAttempts)) { try users.signIn(email: demo, password: InMemoryUserService.demoPassword, session: "s9") }
            clock.advance(by: 59)
            #expect(throws: ServiceFailure.refused(.tooManyAttempts)) { try users.signIn(email: demo, password: InMemoryUserService.demoPassword, session: "s9") }
            // 60 s the first time, 120 s the second.
            clock.advance(by: round == 0 ? 2 : 62)
        }
        #expect(try users.signIn(email: demo, password: InMemoryUserService.demoPassword, session: "s9").email == demo)
    }

    @Test func durableServicesReopenWithWhatTheyCommitted() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("movies-\(UUID().uuidString)/movies.sqlite").path
        defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        let first = try AppServices.durable(path: path, catalog: try Catalog.bundled(), clock: clock.now, hashIterations: 16)
        _ = try first.users.register(registration())
        let token = try #require(token(in: try first.mail.outbox(email: "ana@example.com").last))
        _ = try first.users.verify(email: "ana@example.com", token: token, session: "s1")
        _ = try first.movies.like(id: "actor:1", user: "ana@example.com")
        try first.users.changePassword(session: "s1", current: "secret123", new: "another123")
        var report = Movies_V1_ExpenseReport()
        report.totalCentavos = 990
        try first.expenses.submit(report, session: "s1")

        // A second process on the same file: everything committed is there, the demo seeded once.
        let second = try AppServices.durable(path: path, catalog: try Catalog.bundled(), clock: clock.now, hashIterations: 16)
        #expect(try second.users.account(forSession: "s1").email == "ana@example.com")
        #expect(try second.users.signIn(email: "ana@example.com", password: "another123", session: "s2").verified)
        #expect(try second.movies.likes(user: "ana@example.com").map(\.id) == ["actor:1"])
        #expect(try second.expenses.reports(session: "s1").map(\.totalCentavos) == [990])
        #expect(try second.mail.outbox(email: "ana@example.com").count == 1)
        #expect(try second.users.signIn(email: InMemoryUserService.demoEmail, password: InMemoryUserService.demoPassword, session: "s3").email
            == InMemoryUserService.demoEmail)
    }

    @Test func theDemoAccountSignsInAndOut() throws {
        let account = try users.signIn(email: "demo@flowbus.dev", password: "flowbus123", session: "s1")
        #expect(account.verified)
        #expect(account.name == "Demo")
        #expect(account.nickname == "demo")
        #expect(account.genres.count == 2)
        #expect(try users.account(forSession: "s1").email == "demo@flowbus.dev")
        try users.signOut(session: "s1")
        #expect(throws: ServiceFailure.refused(.notSignedIn)) { try users.account(forSession: "s1") }
    }

    @Test func verifyChecksTheTokenThenSignsTheSessionIn() throws {
        _ = try users.register(registration())
        let token = try lastToken("ana@example.com")
        let wrong = token == "000000" ? "111111" : "000000"
        #expect(throws: ServiceFailure.refused(.wrongToken)) { try users.verify(email: "ana@example.com", token: wrong, session: "s1") }
        #expect(throws: ServiceFailure.refused(.unknownAccount)) { try users.verify(email: "bo@example.com", token: token, session: "s1") }
        let account = try users.verify(email: "ana@example.com", token: token, session: "s1")
        #expect(account.verified)
        #expect(try users.account(forSession: "s1").email == "ana@example.com")
        #expect(throws: ServiceFailure.refused(.alreadyVerified)) { try users.verify(email: "ana@example.com", token: token, session: "s2") }
        #expect(try users.signIn(email: "ana@example.com", password: "secret123", session: "s2").verified)
    }

    @Test func aTokenExpiresAfterItsLifetimeAndResendGivesANewOne() throws {
        _ = try users.register(registration())
        let first = try lastToken("ana@example.com")
        clock.advance(by: 600)
        clock.advance(by: 1)
        #expect(throws: ServiceFailure.refused(.expiredToken)) { try users.verify(email: "ana@example.com", token: first, session: "s1") }
        try users.resendToken(email: "ana@example.com")
        #expect(try services.mail.outbox(email: "ana@example.com").count == 2)
        let second = try lastToken("ana@example.com")
        clock.advance(by: 599)
        #expect(try users.verify(email: "ana@example.com", token: second, session: "s1").verified)
        #expect(throws: ServiceFailure.refused(.alreadyVerified)) { try users.resendToken(email: "ana@example.com") }
        #expect(throws: ServiceFailure.refused(.unknownAccount)) { try users.resendToken(email: "bo@example.com") }
    }

    @Test func theTokenLifetimeIsConfigurable() throws {
        let services = try makeInMemoryServices(clock: clock, tokenLifetime: 30)
        _ = try services.users.register(registration())
        let code = try #require(token(in: try services.mail.outbox(email: "ana@example.com").last))
        clock.advance(by: 31)
        #expect(throws: ServiceFailure.refused(.expiredToken)) { try services.users.verify(email: "ana@example.com", token: code, session: "s1") }
    }

    @Test func changePasswordNeedsTheCurrentOne() throws {
        #expect(throws: ServiceFailure.refused(.notSignedIn)) { try users.changePassword(session: "s1", current: "flowbus123", new: "another123") }
        _ = try users.signIn(email: "demo@flowbus.dev", password: "flowbus123", session: "s1")
        #expect(throws: ServiceFailure.refused(.wrongPassword)) { try users.changePassword(session: "s1", current: "nope-nope", new: "another123") }
        try users.changePassword(session: "s1", current: "flowbus123", new: "another123")
        #expect(throws: ServiceFailure.refused(.invalidCredentials)) { try users.signIn(email: "demo@flowbus.dev", password: "flowbus123", session: "s2") }
        #expect(try users.signIn(email: "demo@flowbus.dev", password: "another123", session: "s2").email == "demo@flowbus.dev")
    }

    @Test func passwordResetMailsKnownAddressesAndRevealsNothingAboutUnknownOnes() throws {
        try users.requestPasswordReset(email: "nobody@example.com")
        #expect(try services.mail.outbox(email: "nobody@example.com").isEmpty)
        #expect(throws: ServiceFailure.refused(.wrongToken)) {
            try users.resetPassword(email: "nobody@example.com", code: "123456", newPassword: "another123")
        }
        try users.requestPasswordReset(email: "demo@flowbus.dev")
        #expect(try services.mail.outbox(email: "demo@flowbus.dev").count == 1)
    }

    /// Issue 17, bug 10: the mail said "ask an operator"; its code now leads to a new password.
    @Test func theMailedCodeSetsANewPasswordOnceAndSignsOutTheOldSessions() throws {
        let demo = InMemoryUserService.demoEmail
        _ = try users.signIn(email: demo, password: InMemoryUserService.demoPassword, session: "old")
        try users.requestPasswordReset(email: "DEMO@flowbus.dev")
        let mail = try #require(try services.mail.outbox(email: demo).last)
        #expect(mail.body.contains("valid for 15 minutes") && mail.subject.contains("reset code"), "\(mail)")
        let code = try #require(mail.token)
        let wrong = code == "000000" ? "111111" : "000000"
        #expect(throws: ServiceFailure.refused(.wrongToken)) { try users.resetPassword(email: demo, code: wrong, newPassword: "another123") }
        #expect(throws: ServiceFailure.refused(.passwordTooShort)) { try users.resetPassword(email: demo, code: code, newPassword: "short") }
        try users.resetPassword(email: demo, code: " \(code) ", newPassword: "another123")
        #expect(throws: ServiceFailure.refused(.notSignedIn), "a session signed in with the old password stays signed in") {
            try users.account(forSession: "old")
        }
        #expect(throws: ServiceFailure.refused(.invalidCredentials)) {
            try users.signIn(email: demo, password: InMemoryUserService.demoPassword, session: "s2")
        }
        #expect(try users.signIn(email: demo, password: "another123", session: "s2").email == demo)
        #expect(throws: ServiceFailure.refused(.wrongToken), "a code works once") {
            try users.resetPassword(email: demo, code: code, newPassword: "third-one1")
        }
    }

    @Test func aResetCodeExpiresAndFiveWrongTriesVoidIt() throws {
        let demo = InMemoryUserService.demoEmail
        try users.requestPasswordReset(email: demo)
        let code = try #require(try services.mail.outbox(email: demo).last?.token)
        clock.advance(by: InMemoryUserService.defaultResetCodeLifetime + 1)
        #expect(throws: ServiceFailure.refused(.expiredToken)) { try users.resetPassword(email: demo, code: code, newPassword: "another123") }
        try users.requestPasswordReset(email: demo)
        let fresh = try #require(try services.mail.outbox(email: demo).last?.token)
        let wrong = fresh == "000000" ? "111111" : "000000"
        for _ in 0..<ResetCode.maximumWrongTries {
            #expect(throws: ServiceFailure.refused(.wrongToken)) { try users.resetPassword(email: demo, code: wrong, newPassword: "another123") }
        }
        clock.advance(by: 901)  // past the lockout: the code itself is void now
        #expect(throws: ServiceFailure.refused(.wrongToken)) { try users.resetPassword(email: demo, code: fresh, newPassword: "another123") }
    }

    /// Issue 17: the 600 s lifetime was only a constructor parameter; movies-services takes
    /// --token-lifetime, and the mail says the lifetime it has.
    @Test func movieServicesReadTheLifetimesFromTheirOptionsAndRefuseNonsense() throws {
        let defaults = try AppServices.codeLifetimes(from: [:])
        #expect(defaults.token == 600 && defaults.resetCode == 900)
        let set = try AppServices.codeLifetimes(from: ["token-lifetime": "90", "reset-code-lifetime": "3600"])
        #expect(set.token == 90 && set.resetCode == 3600)
        for bad in ["0", "-5", "10m", "86401"] {
            #expect(throws: PluginEnvironmentError.self) { try AppServices.codeLifetimes(from: ["token-lifetime": bad]) }
        }
    }

    @Test func theTokenLifetimeIsTheOneConfiguredAndTheMailSaysIt() throws {
        let services = try makeInMemoryServices(clock: clock, tokenLifetime: 90)
        _ = try services.users.register(registration())
        let mail = try #require(try services.mail.outbox(email: "ana@example.com").last)
        #expect(mail.body.contains("valid for 2 minutes"), "\(mail.body)")
        clock.advance(by: 91)
        #expect(throws: ServiceFailure.refused(.expiredToken)) {
            try services.users.verify(email: "ana@example.com", token: try #require(mail.token), session: "s1")
        }
    }

    @Test func passwordsAreStoredSaltedAndHashed() {
        let first = PasswordHash(password: "secret123", iterations: 100)
        let second = PasswordHash(password: "secret123", iterations: 100)
        #expect(first.salt != second.salt)
        #expect(first.derived != second.derived)
        #expect(first.derived != Array("secret123".utf8))
        #expect(first.matches("secret123"))
        #expect(!first.matches("secret124"))
    }

    @Test func pbkdf2MatchesTheRFC7914TestVector() {
        // RFC 7914 §11: PBKDF2-HMAC-SHA256("passwd", "salt", c = 1), first 32 bytes.
        let derived = PasswordHash.derive("passwd", salt: Array("salt".utf8), iterations: 1)
        let hex = derived.map { String(format: "%02x", $0) }.joined()
        #expect(hex == "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc")
    }

    /// The PBKDF2-HMAC-SHA256 values Python's hashlib (OpenSSL) gives, over 1, 2 and 4,096
    /// rounds and a key longer than a SHA-256 block (hashed first, as HMAC says).
    @Test(arguments: [
        ("password", Array("salt".utf8), 1, "120fb6cffcf8b32c43e7225256c4f837a86548c92ccc35480805987cb70be17b"),
        ("password", Array("salt".utf8), 2, "ae4d0c95af6b46d32d0adff928f06dd02a303f8ef3c251dfd6e2d85a95474c43"),
        ("password", Array("salt".utf8), 4096, "c5e478d59288c841aa530db6845c4c8d962893a001ce4e11a4963873aa98134a"),
        (String(repeating: "p", count: 100), Array(0..<16), 3, "a5fc77a0eb49e46b5d81c2f5a798c62ed0d9fc67095d50654877d117a920dc52"),
    ])
    func pbkdf2MatchesOpenSSL(password: String, salt: [UInt8], iterations: Int, expected: String) {
        let derived = PasswordHash.derive(password, salt: salt, iterations: iterations)
        #expect(derived.map { String(format: "%02x", $0) }.joined() == expected)
    }

    @Test func concurrentRegistrationsAllLand() throws {
        let users = InMemoryUserService(mail: InMemoryMailService(), hashIterations: 16)
        let mail = users.mail
        DispatchQueue.concurrentPerform(iterations: 40) { index in
            _ = try? users.register(registration("user\(index)@example.com"))
        }
        for index in 0..<40 {
            #expect(try mail.outbox(email: "user\(index)@example.com").count == 1)
        }
    }
}
