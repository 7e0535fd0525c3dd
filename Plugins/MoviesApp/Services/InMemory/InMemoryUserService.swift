import AccountKit
import FlowProtocol
import Foundation
import Synchronization

/// Accounts in memory: hashed passwords, 6-digit tokens that expire, sessions signed in.
public final class InMemoryUserService: UserService, Sendable {
    struct StoredAccount {
        var account: Account
        var password: PasswordHash
        var token: String
        var tokenIssued: Date
    }

    struct Store {
        var accounts: [String: StoredAccount] = [:]
        /// Session id → account e-mail.
        var sessions: [String: String] = [:]
    }

    /// The demo account of the README, already verified.
    public static let demoEmail = "demo@flowbus.dev"
    public static let demoPassword = "flowbus123"
    /// PBKDF2 rounds per password; tests may lower it to run faster.
    public static let defaultHashIterations = 4096

    let store = Mutex(Store())
    let mail: any MailService & Sendable
    let tokenLifetime: TimeInterval
    let clock: AppClock
    let hashIterations: Int
    /// Wrong passwords and codes per account and per session: verify, signIn and changePassword
    /// are refused `tooManyAttempts` while either is locked.
    public let attempts: AttemptLimiter

    /// - Parameters:
    ///   - tokenLifetime: how long a verification token stays valid, in seconds (default 10 minutes).
    ///   - clock: the time tokens are issued and checked at.
    public init(
        mail: any MailService & Sendable, tokenLifetime: TimeInterval = 600, clock: @escaping AppClock = { Date() },
        hashIterations: Int = InMemoryUserService.defaultHashIterations, attempts: AttemptLimiter = AttemptLimiter()
    ) {
        self.attempts = attempts
        self.mail = mail
        self.tokenLifetime = tokenLifetime
        self.clock = clock
        self.hashIterations = hashIterations
    }

    /// Adds the demo account (demo@flowbus.dev / flowbus123, verified, two genres).
    public func seedDemoAccount() {
        var account = Account()
        account.email = Self.demoEmail
        account.name = "Demo"
        account.nickname = "demo"
        account.genres = ["drama", "scifi"]
        account.verified = true
        let stored = StoredAccount(
            account: account, password: PasswordHash(password: Self.demoPassword, iterations: hashIterations), token: "",
            tokenIssued: .distantPast)
        store.withLock { $0.accounts[Self.demoEmail] = stored }
    }

    static func key(_ email: String) -> String { email.trimmingCharacters(in: .whitespaces).lowercased() }

    static func newToken() -> String {
        var generator = SystemRandomNumberGenerator()
        let number = Int.random(in: 0...999_999, using: &generator)
        let digits = String(number)
        return String(repeating: "0", count: 6 - digits.count) + digits
    }

    static func tokenMail(to email: String, token: String) -> Mail {
        Mail(
            to: email, subject: "Your Flowbus verification code",
            body: "Your verification code is \(token). Type it on the verification screen; it is valid for 10 minutes.")
    }

    public func register(_ registration: Registration) throws(ServiceFailure) -> Account {
        let email = Self.key(registration.email)
        let token = Self.newToken()
        let password = PasswordHash(password: registration.password, iterations: hashIterations)
        let now = clock()
        let created: Account? = store.withLock { store in
            guard store.accounts[email] == nil else { return nil }
            var account = Account()
            account.email = email
            account.name = registration.name
            account.nickname = registration.nickname
            account.genres = registration.genres
            store.accounts[email] = StoredAccount(account: account, password: password, token: token, tokenIssued: now)
            return account
        }
        guard let created else { throw .refused(.emailTaken) }
        try mail.send(Self.tokenMail(to: email, token: token))
        return created
    }

    public func verify(email: String, token: String, session: String) throws(ServiceFailure) -> Account {
        let email = Self.key(email)
        let now = clock()
        let lifetime = tokenLifetime
        let keys = Self.attemptKeys(email: email, session: session)
        if attempts.wait(for: keys, now: now) != nil { throw .refused(.tooManyAttempts) }
        let result: Result<Account, ServiceFailure> = store.withLock { store in
            guard var stored = store.accounts[email] else { return .failure(.refused(.unknownAccount)) }
            guard !stored.account.verified else { return .failure(.refused(.alreadyVerified)) }
            guard !token.isEmpty, stored.token == token else { return .failure(.refused(.wrongToken)) }
            guard now.timeIntervalSince(stored.tokenIssued) <= lifetime else { return .failure(.refused(.expiredToken)) }
            stored.account.verified = true
            stored.token = ""
            store.accounts[email] = stored
            if !session.isEmpty { store.sessions[session] = email }
            return .success(stored.account)
        }
        switch result {
        case .success: attempts.recordSuccess(keys)
        case .failure(.refused(.wrongToken)): attempts.recordFailure(keys, now: now)
        case .failure: break
        }
        return try result.get()
    }

    static func attemptKeys(email: String, session: String) -> [String] {
        [AttemptLimiter.account(email)] + (session.isEmpty ? [] : [AttemptLimiter.peer(session)])
    }

    public func resendToken(email: String) throws(ServiceFailure) {
        let email = Self.key(email)
        let token = Self.newToken()
        let now = clock()
        let refusal: Refusal? = store.withLock { store in
            guard var stored = store.accounts[email] else { return .unknownAccount }
            guard !stored.account.verified else { return .alreadyVerified }
            stored.token = token
            stored.tokenIssued = now
            store.accounts[email] = stored
            return nil
        }
        if let refusal { throw .refused(refusal) }
        try mail.send(Self.tokenMail(to: email, token: token))
    }

    public func signIn(email: String, password: String, session: String) throws(ServiceFailure) -> Account {
        let email = Self.key(email)
        let keys = Self.attemptKeys(email: email, session: session)
        let now = clock()
        if attempts.wait(for: keys, now: now) != nil { throw .refused(.tooManyAttempts) }
        // Hashing runs outside the lock: it is the slow part.
        guard let stored = store.withLock({ $0.accounts[email] }), stored.password.matches(password) else {
            attempts.recordFailure(keys, now: now)
            throw .refused(.invalidCredentials)
        }
        attempts.recordSuccess(keys)
        guard stored.account.verified else { throw .refused(.unverified) }
        store.withLock { $0.sessions[session] = email }
        return stored.account
    }

    public func account(forSession session: String) throws(ServiceFailure) -> Account {
        let account = store.withLock { store in store.sessions[session].flatMap { store.accounts[$0]?.account } }
        guard let account else { throw .refused(.notSignedIn) }
        return account
    }

    public func signOut(session: String) throws(ServiceFailure) {
        store.withLock { _ = $0.sessions.removeValue(forKey: session) }
    }

    public func changePassword(session: String, current: String, new: String) throws(ServiceFailure) {
        let found = store.withLock { store in store.sessions[session].flatMap { email in store.accounts[email].map { (email, $0) } } }
        guard let (email, stored) = found else { throw .refused(.notSignedIn) }
        let keys = Self.attemptKeys(email: email, session: session)
        let now = clock()
        if attempts.wait(for: keys, now: now) != nil { throw .refused(.tooManyAttempts) }
        guard stored.password.matches(current) else {
            attempts.recordFailure(keys, now: now)
            throw .refused(.wrongPassword)
        }
        attempts.recordSuccess(keys)
        let replacement = PasswordHash(password: new, iterations: hashIterations)
        store.withLock { $0.accounts[email]?.password = replacement }
    }

    public func requestPasswordReset(email: String) throws(ServiceFailure) {
        let email = Self.key(email)
        guard store.withLock({ $0.accounts[email] != nil }) else { return }
        try mail.send(Mail(
            to: email, subject: "Reset your Flowbus password",
            body: "Someone asked to reset the password of this account. If it was you, sign in with the demo tools or ask an operator; if not, ignore this mail."))
    }
}
