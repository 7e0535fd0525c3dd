import AccountKit
@testable import PhotosApp
import Testing

@Suite struct AccountServiceTests {
    let services: PhotosServices

    init() throws {
        services = try makeServices()
    }

    var accounts: any AccountService { services.accounts }

    @Test func theDemoAccountSignsInAndOut() throws {
        let account = try accounts.signIn(email: "demo@photos.dev", password: "photos123", session: "s1")
        #expect(account.name == "Demo Photographer")
        #expect(account.email == "demo@photos.dev")
        #expect(InMemoryAccountService.demoEmail == "demo@photos.dev")
        #expect(InMemoryAccountService.demoPassword == "photos123")
        #expect(try accounts.account(forSession: "s1") == account)
        try accounts.signOut(session: "s1")
        #expect(throws: ServiceFailure.refused(.notSignedIn)) { try accounts.account(forSession: "s1") }
    }

    @Test func wrongPasswordsLockSignInForTheAccountAndTheSession() throws {
        for index in 0..<5 {
            #expect(throws: ServiceFailure.refused(.invalidCredentials)) { try accounts.signIn(email: "demo@photos.dev", password: "guess\(index)", session: "probe") }
        }
        #expect(throws: ServiceFailure.refused(.tooManyAttempts)) { try accounts.signIn(email: "demo@photos.dev", password: "photos123", session: "s1") }
        #expect(Refusal.tooManyAttempts.message.contains("Wait"))
    }

    @Test func registerStoresTheAccountWithNoVerification() throws {
        let account = try accounts.register(name: "  Ana Lima ", email: "Ana@Example.com ", password: "secret123", session: "")
        #expect(account.name == "Ana Lima")
        #expect(account.email == "ana@example.com")
        #expect(throws: ServiceFailure.refused(.notSignedIn)) { try accounts.account(forSession: "") }
        #expect(try services.mail.outbox(email: "ana@example.com").isEmpty)
        #expect(try accounts.signIn(email: "ANA@example.com", password: "secret123", session: "s1") == account)
    }

    @Test func registerWithASessionSignsItIn() throws {
        let account = try accounts.register(name: "Ana", email: "ana@example.com", password: "secret123", session: "s1")
        #expect(try accounts.account(forSession: "s1") == account)
    }

    @Test func anEmailIsTakenWhateverItsCase() throws {
        _ = try accounts.register(name: "Ana", email: "ana@example.com", password: "secret123", session: "")
        #expect(throws: ServiceFailure.refused(.emailTaken)) {
            try accounts.register(name: "Other Ana", email: "ANA@Example.COM", password: "another123", session: "s2")
        }
        #expect(throws: ServiceFailure.refused(.emailTaken)) {
            try accounts.register(name: "Not Demo", email: "Demo@Photos.dev", password: "another123", session: "")
        }
        #expect(throws: ServiceFailure.refused(.notSignedIn)) { try accounts.account(forSession: "s2") }
        #expect(try accounts.signIn(email: "ana@example.com", password: "secret123", session: "s1").name == "Ana")
    }

    @Test(arguments: [
        ("", "ana@example.com", "secret123", Refusal.nameMissing),
        ("   ", "ana@example.com", "secret123", .nameMissing),
        ("Ana", "ana.example.com", "secret123", .invalidEmail),
        ("Ana", "ana@example", "secret123", .invalidEmail),
        ("Ana", "ana@example.com", "short", .passwordTooShort),
    ])
    func registerKeepsTheAccountRules(name: String, email: String, password: String, refusal: Refusal) throws {
        #expect(throws: ServiceFailure.refused(refusal)) { try accounts.register(name: name, email: email, password: password, session: "s1") }
        #expect(throws: ServiceFailure.refused(.invalidCredentials)) { try accounts.signIn(email: email, password: password, session: "s1") }
    }

    @Test func thePasswordRuleIsAccountKits() throws {
        let shortest = String(repeating: "x", count: AccountRules.minimumPasswordLength)
        #expect(throws: ServiceFailure.refused(.passwordTooShort)) {
            try accounts.register(name: "Ana", email: "ana@example.com", password: String(shortest.dropLast()), session: "")
        }
        _ = try accounts.register(name: "Ana", email: "ana@example.com", password: shortest, session: "")
        #expect(Refusal.passwordTooShort.message.contains("\(AccountRules.minimumPasswordLength) characters"))
    }

    @Test func signInRefusesUnknownAndWrongAlike() throws {
        _ = try accounts.register(name: "Ana", email: "ana@example.com", password: "secret123", session: "")
        #expect(throws: ServiceFailure.refused(.invalidCredentials)) { try accounts.signIn(email: "nobody@example.com", password: "secret123", session: "s1") }
        #expect(throws: ServiceFailure.refused(.invalidCredentials)) { try accounts.signIn(email: "ana@example.com", password: "wrong-one", session: "s1") }
        #expect(throws: ServiceFailure.refused(.invalidCredentials)) { try accounts.signIn(email: "demo@photos.dev", password: "PHOTOS123", session: "s1") }
        #expect(throws: ServiceFailure.refused(.notSignedIn)) { try accounts.account(forSession: "s1") }
    }

    @Test func sessionsAreSeparate() throws {
        _ = try accounts.register(name: "Ana", email: "ana@example.com", password: "secret123", session: "s1")
        _ = try accounts.signIn(email: "demo@photos.dev", password: "photos123", session: "s2")
        #expect(try accounts.account(forSession: "s1").email == "ana@example.com")
        #expect(try accounts.account(forSession: "s2").email == "demo@photos.dev")
        try accounts.signOut(session: "s1")
        try accounts.signOut(session: "s1")
        try accounts.signOut(session: "never-signed-in")
        #expect(throws: ServiceFailure.refused(.notSignedIn)) { try accounts.account(forSession: "s1") }
        #expect(try accounts.account(forSession: "s2").email == "demo@photos.dev")
    }

    @Test func passwordsAreStoredAsHashes() throws {
        let store = try #require(accounts as? InMemoryAccountService)
        _ = try accounts.register(name: "Ana", email: "ana@example.com", password: "secret123", session: "")
        let stored = try #require(store.store.withLock { $0.accounts["ana@example.com"] })
        #expect(stored.password.matches("secret123"))
        #expect(!stored.password.matches("secret124"))
        #expect(stored.password.salt.count == 16)
        #expect(stored.password.derived != Array("secret123".utf8))
    }

    @Test func everyRefusalHasAMessage() {
        for refusal in Refusal.allCases {
            #expect(refusal.message.hasSuffix("."), "\(refusal)")
            #expect(Refusal(rawValue: refusal.description) == refusal)
        }
    }
}
