import AccountKit
import AppStore
import Foundation
import SwiftProtobuf
import Synchronization

/// Accounts in memory: hashed passwords, signed-in sessions and 6-digit reset codes that expire.
/// With a `RecordStore`, every change is committed there before the call answers (`account`
/// records by e-mail key, `signin` by session, `reset` by e-mail key) and loaded back at start.
/// The guess limits (`attempts`) stay in memory: a restart forgets them, not the codes' own
/// count of wrong tries.
public final class InMemoryAccountService: AccountService, Sendable {
    struct StoredAccount: PasswordHolder {
        var account: Photos_V1_Account
        var password: PasswordHash

        enum CodingKeys: String, CodingKey { case account, password }

        init(account: Photos_V1_Account, password: PasswordHash) {
            self.account = account
            self.password = password
        }

        init(from decoder: any Swift.Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            account = try Photos_V1_Account(serializedBytes: try container.decode(Data.self, forKey: .account))
            password = try container.decode(PasswordHash.self, forKey: .password)
        }

        func encode(to encoder: any Swift.Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(try account.serializedBytes() as Data, forKey: .account)
            try container.encode(password, forKey: .password)
        }
    }

    struct Store {
        /// By e-mail key (see `emailKey`).
        var accounts: [String: StoredAccount] = [:]
        /// Session id → e-mail key of the account it is signed in as.
        var sessions: [String: String] = [:]
        /// E-mail key → the code last mailed to it.
        var resetCodes: [String: ResetCode] = [:]
    }

    /// The demo account of the README.
    public static let demoEmail = "demo@photos.dev"
    public static let demoPassword = "photos123"
    public static let demoName = "Demo Photographer"
    /// PBKDF2 rounds per password; tests may lower it to run faster.
    public static let defaultHashIterations = 4096
    /// How long a reset code stays valid: 15 minutes.
    public static let defaultCodeLifetime: TimeInterval = 15 * 60
    /// Wrong codes accepted before the code is void (6 digits must not be guessable by trying).
    public static let maximumWrongCodes = ResetCode.maximumWrongTries

    let store = Mutex(Store())
    let mail: any MailService & Sendable
    let codeLifetime: TimeInterval
    let clock: PhotosClock
    let hashIterations: Int
    /// Wrong passwords per account and per session, wrong reset codes per account (across
    /// codes: asking for a new one does not start the count again): refused `tooManyAttempts`.
    public let attempts: AttemptLimiter
    /// Where accounts, signed-in sessions and reset codes are committed; nil: memory only.
    let records: RecordStore?

    /// - Parameters:
    ///   - codeLifetime: how long a password reset code stays valid, in seconds.
    ///   - clock: the time codes are issued and checked at.
    public init(
        mail: any MailService & Sendable, codeLifetime: TimeInterval = InMemoryAccountService.defaultCodeLifetime,
        clock: @escaping PhotosClock = { Date() }, hashIterations: Int = InMemoryAccountService.defaultHashIterations,
        attempts: AttemptLimiter = AttemptLimiter(), records: RecordStore? = nil
    ) {
        self.records = records
        self.attempts = attempts
        self.mail = mail
        self.codeLifetime = codeLifetime
        self.clock = clock
        self.hashIterations = hashIterations
    }

    /// Follows the accounts, signed-in sessions and reset codes of the record store (none
    /// without one): loaded at start, and kept up with other replicas' writes.
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

    /// Adds the demo account (demo@photos.dev / photos123, "Demo Photographer"), unless the
    /// record store already had it (its password may have been reset since).
    public func seedDemoAccount() {
        var account = Photos_V1_Account()
        account.email = Self.demoEmail
        account.name = Self.demoName
        let stored = StoredAccount(account: account, password: PasswordHash(password: Self.demoPassword, iterations: hashIterations))
        store.withLock { store in
            if store.accounts[Self.demoEmail] == nil { store.accounts[Self.demoEmail] = stored }
        }
    }

    public func register(name: String, email: String, password: String, session: String) throws(ServiceFailure) -> Photos_V1_Account {
        let name = name.trimmingCharacters(in: .whitespacesAndNewlines)
        let email = emailKey(email)
        guard !name.isEmpty else { throw .refused(.nameMissing) }
        guard AccountRules.isWellFormedEmail(email) else { throw .refused(.invalidEmail) }
        guard password.count >= AccountRules.minimumPasswordLength else { throw .refused(.passwordTooShort) }
        // Hashing runs outside the lock: it is the slow part.
        let hash = PasswordHash(password: password, iterations: hashIterations)
        let created: Photos_V1_Account? = try store.withLock { store throws(ServiceFailure) in
            guard store.accounts[email] == nil else { return nil }
            var account = Photos_V1_Account()
            account.name = name
            account.email = email
            let stored = StoredAccount(account: account, password: hash)
            try records.commit([.put("account", email, json: stored)] + (session.isEmpty ? [] : [.put("signin", session, json: email)]))
            store.accounts[email] = stored
            if !session.isEmpty { store.sessions[session] = email }
            return account
        }
        guard let created else { throw .refused(.emailTaken) }
        return created
    }

    public func signIn(email: String, password: String, session: String) throws(ServiceFailure) -> Photos_V1_Account {
        let email = emailKey(email)
        let keys = [AttemptLimiter.account(email)] + (session.isEmpty ? [] : [AttemptLimiter.peer(session)])
        let now = clock()
        if attempts.wait(for: keys, now: now) != nil { throw .refused(.tooManyAttempts) }
        guard let stored = store.withLock({ $0.accounts[email] }), stored.password.matches(password) else {
            attempts.recordFailure(keys, now: now)
            throw .refused(.invalidCredentials)
        }
        attempts.recordSuccess(keys)
        try store.withLock { store throws(ServiceFailure) in
            try records.commit([.put("signin", session, json: email)])
            store.sessions[session] = email
        }
        return stored.account
    }

    public func account(forSession session: String) throws(ServiceFailure) -> Photos_V1_Account {
        let account = store.withLock { store in store.sessions[session].flatMap { store.accounts[$0]?.account } }
        guard let account else { throw .refused(.notSignedIn) }
        return account
    }

    public func signOut(session: String) throws(ServiceFailure) {
        try store.withLock { store throws(ServiceFailure) in
            guard store.sessions[session] != nil else { return }
            try records.commit([.delete(kind: "signin", key: session)])
            store.sessions[session] = nil
        }
    }

    public func requestPasswordReset(email: String) throws(ServiceFailure) {
        let email = emailKey(email)
        let now = clock()
        let issued = try store.withLock { store throws(ServiceFailure) -> ResetCode? in
            try ResetCode.issue(for: email, now: now, accounts: store.accounts, codes: &store.resetCodes) { changes throws(ServiceFailure) in
                try records.commit(try changes())
            }
        }
        guard let issued else { return }
        try mail.send(Self.resetMail(to: email, code: issued.code, lifetime: codeLifetime))
    }

    public func resetPassword(email: String, code: String, newPassword: String) throws(ServiceFailure) {
        let email = emailKey(email)
        guard newPassword.count >= AccountRules.minimumPasswordLength else { throw .refused(.passwordTooShort) }
        let hash = PasswordHash(password: newPassword, iterations: hashIterations)
        let now = clock()
        let lifetime = codeLifetime
        let keys = [AttemptLimiter.account(email)]
        if attempts.wait(for: keys, now: now) != nil { throw .refused(.tooManyAttempts) }
        let outcome = try store.withLock { store throws(ServiceFailure) -> ResetCode.Outcome in
            try ResetCode.reset(
                email: email, typed: code, hash: hash, now: now, lifetime: lifetime,
                accounts: &store.accounts, sessions: &store.sessions, codes: &store.resetCodes
            ) { changes throws(ServiceFailure) in try records.commit(try changes()) }
        }
        switch outcome {
        case .changed: attempts.recordSuccess(keys)
        case .expired: throw .refused(.expiredCode)
        case .wrong:
            attempts.recordFailure(keys, now: now)
            throw .refused(.wrongCode)
        }
    }

    static func resetMail(to email: String, code: String, lifetime: TimeInterval) -> Mail {
        Mail(
            to: email, subject: "Your Photos password reset code",
            body: "Your password reset code is \(code). Use it to choose a new password; it is valid for \(ResetCode.validity(lifetime)). If you did not ask for it, ignore this mail: your password stays as it is.",
            code: code)
    }
}
