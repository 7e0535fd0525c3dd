import AccountKit
import AppStore
import FlowProtocol
import Foundation
import SwiftProtobuf
import Synchronization

/// Accounts in memory: hashed passwords, 6-digit verification tokens and password reset codes
/// that expire, sessions signed in; with a `RecordStore`, every change is committed there before
/// the call answers (`account` records by e-mail, `signin` by session, `reset` by e-mail), and
/// loaded back at start.
public final class InMemoryUserService: UserService, Sendable {
    struct StoredAccount: PasswordHolder {
        var account: Account
        var password: PasswordHash
        var token: String
        var tokenIssued: Date

        enum CodingKeys: String, CodingKey { case account, password, token, tokenIssued }

        init(account: Account, password: PasswordHash, token: String, tokenIssued: Date) {
            self.account = account
            self.password = password
            self.token = token
            self.tokenIssued = tokenIssued
        }

        init(from decoder: any Swift.Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            account = try Account(serializedBytes: try container.decode(Data.self, forKey: .account))
            password = try container.decode(PasswordHash.self, forKey: .password)
            token = try container.decode(String.self, forKey: .token)
            tokenIssued = try container.decode(Date.self, forKey: .tokenIssued)
        }

        func encode(to encoder: any Swift.Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(try account.serializedBytes() as Data, forKey: .account)
            try container.encode(password, forKey: .password)
            try container.encode(token, forKey: .token)
            try container.encode(tokenIssued, forKey: .tokenIssued)
        }
    }

    struct Store {
        var accounts: [String: StoredAccount] = [:]
        /// Session id → account e-mail.
        var sessions: [String: String] = [:]
        /// Account e-mail → the password reset code last mailed to it.
        var resetCodes: [String: ResetCode] = [:]
    }

    /// The demo account of the README, already verified.
    public static let demoEmail = "demo@flowbus.dev"
    public static let demoPassword = "flowbus123"
    /// PBKDF2 rounds per password; tests may lower it to run faster.
    public static let defaultHashIterations = 4096
    /// How long a verification token stays valid unless told otherwise: 10 minutes.
    public static let defaultTokenLifetime: TimeInterval = 600
    /// How long a password reset code stays valid unless told otherwise: 15 minutes.
    public static let defaultResetCodeLifetime: TimeInterval = 15 * 60

    let store = Mutex(Store())
    let mail: any MailService & Sendable
    let tokenLifetime: TimeInterval
    let resetCodeLifetime: TimeInterval
    let clock: AppClock
    let hashIterations: Int
    /// Wrong passwords and codes per account and per session: verify, signIn and changePassword
    /// are refused `tooManyAttempts` while either is locked.
    public let attempts: AttemptLimiter
    /// Where accounts (`account` records by e-mail) and signed-in sessions (`signin` records by
    /// session) are kept; nil: memory only.
    let records: RecordStore?

    /// - Parameters:
    ///   - tokenLifetime: how long a verification token stays valid, in seconds (default 10 minutes).
    ///   - resetCodeLifetime: how long a password reset code stays valid, in seconds (default 15 minutes).
    ///   - clock: the time tokens and codes are issued and checked at.
    public init(
        mail: any MailService & Sendable, tokenLifetime: TimeInterval = InMemoryUserService.defaultTokenLifetime,
        resetCodeLifetime: TimeInterval = InMemoryUserService.defaultResetCodeLifetime, clock: @escaping AppClock = { Date() },
        hashIterations: Int = InMemoryUserService.defaultHashIterations, attempts: AttemptLimiter = AttemptLimiter(),
        records: RecordStore? = nil
    ) {
        self.records = records
        self.attempts = attempts
        self.mail = mail
        self.tokenLifetime = tokenLifetime
        self.resetCodeLifetime = resetCodeLifetime
        self.clock = clock
        self.hashIterations = hashIterations
    }

    /// Follows the accounts and signed-in sessions of the record store (none without one):
    /// loaded at start, and kept up with other replicas' writes.
    public func followRecords() {
        records?.follow("account", as: StoredAccount.self) { [weak self] email, account in
            self?.store.withLock { $0.accounts[email] = account }
        }
        records?.follow("signin", as: String.self) { [weak self] session, email in
            self?.store.withLock { $0.sessions[session] = email }
        }
        records?.follow("reset", as: ResetCode.self) { [weak self] email, code in
            self?.store.withLock { $0.resetCodes[email] = code }
        }
        // Wrong passwords and codes are counted in the store too.
        if let records { attempts.keep(in: records) }
    }

    /// Commits one account (before memory changes, so a reply never outruns the disk).
    func save(_ email: String, _ stored: StoredAccount) throws(ServiceFailure) {
        try records.commit("account", email, json: stored)
    }

    func saveSession(_ session: String, email: String?) throws(ServiceFailure) {
        if let email { try records.commit("signin", session, json: email) } else { try records.commitDelete("signin", session) }
    }

    /// Adds the demo account (demo@flowbus.dev / flowbus123, verified, two genres), unless the
    /// record store already has it (its password may have been changed).
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
        store.withLock { store in
            if store.accounts[Self.demoEmail] == nil { store.accounts[Self.demoEmail] = stored }
        }
    }

    static func key(_ email: String) -> String { email.trimmingCharacters(in: .whitespaces).lowercased() }

    func tokenMail(to email: String, token: String) -> Mail {
        Mail(
            to: email, subject: "Your Flowbus verification code",
            body: "Your verification code is \(token). Type it on the verification screen; it is valid for \(ResetCode.validity(tokenLifetime)).")
    }

    public func register(_ registration: Registration) throws(ServiceFailure) -> Account {
        let email = Self.key(registration.email)
        let token = ResetCode.sixDigits()
        let password = PasswordHash(password: registration.password, iterations: hashIterations)
        let now = clock()
        let account = try store.withLock { store throws(ServiceFailure) -> Account in
            guard store.accounts[email] == nil else { throw .refused(.emailTaken) }
            var account = Account()
            account.email = email
            account.name = registration.name
            account.nickname = registration.nickname
            account.genres = registration.genres
            let stored = StoredAccount(account: account, password: password, token: token, tokenIssued: now)
            try save(email, stored)
            store.accounts[email] = stored
            return account
        }
        try mail.send(tokenMail(to: email, token: token))
        return account
    }

    public func verify(email: String, token: String, session: String) throws(ServiceFailure) -> Account {
        let email = Self.key(email)
        let now = clock()
        let lifetime = tokenLifetime
        let keys = Self.attemptKeys(email: email, session: session)
        if attempts.wait(for: keys, now: now) != nil { throw .refused(.tooManyAttempts) }
        let result = Result { () throws(ServiceFailure) -> Account in
            try store.withLock { store throws(ServiceFailure) -> Account in
                guard var stored = store.accounts[email] else { throw .refused(.unknownAccount) }
                guard !stored.account.verified else { throw .refused(.alreadyVerified) }
                guard !token.isEmpty, stored.token == token else { throw .refused(.wrongToken) }
                guard now.timeIntervalSince(stored.tokenIssued) <= lifetime else { throw .refused(.expiredToken) }
                stored.account.verified = true
                stored.token = ""
                try save(email, stored)
                if !session.isEmpty { try saveSession(session, email: email) }
                store.accounts[email] = stored
                if !session.isEmpty { store.sessions[session] = email }
                return stored.account
            }
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
        let token = ResetCode.sixDigits()
        let now = clock()
        try store.withLock { store throws(ServiceFailure) in
            guard var stored = store.accounts[email] else { throw .refused(.unknownAccount) }
            guard !stored.account.verified else { throw .refused(.alreadyVerified) }
            stored.token = token
            stored.tokenIssued = now
            try save(email, stored)
            store.accounts[email] = stored
        }
        try mail.send(tokenMail(to: email, token: token))
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
        try saveSession(session, email: email)
        store.withLock { $0.sessions[session] = email }
        return stored.account
    }

    public func account(forSession session: String) throws(ServiceFailure) -> Account {
        let account = store.withLock { store in store.sessions[session].flatMap { store.accounts[$0]?.account } }
        guard let account else { throw .refused(.notSignedIn) }
        return account
    }

    public func signOut(session: String) throws(ServiceFailure) {
        try saveSession(session, email: nil)
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
        try store.withLock { store throws(ServiceFailure) in
            guard var changed = store.accounts[email] else { throw .refused(.notSignedIn) }
            changed.password = replacement
            try save(email, changed)
            store.accounts[email] = changed
        }
    }
}
