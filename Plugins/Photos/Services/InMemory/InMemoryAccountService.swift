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
    struct StoredAccount: Codable {
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

    struct ResetCode: Codable {
        var code: String
        var issued: Date
        var wrongTries = 0
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
    public static let maximumWrongCodes = 5

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
        let code = Self.newCode()
        let now = clock()
        let known = try store.withLock { store throws(ServiceFailure) in
            guard store.accounts[email] != nil else { return false }
            let reset = ResetCode(code: code, issued: now)
            try records.commit([.put("reset", email, json: reset)])
            store.resetCodes[email] = reset
            return true
        }
        guard known else { return }
        try mail.send(Self.resetMail(to: email, code: code, lifetime: codeLifetime))
    }

    public func resetPassword(email: String, code: String, newPassword: String) throws(ServiceFailure) {
        let email = emailKey(email)
        let code = code.trimmingCharacters(in: .whitespaces)
        guard newPassword.count >= AccountRules.minimumPasswordLength else { throw .refused(.passwordTooShort) }
        let hash = PasswordHash(password: newPassword, iterations: hashIterations)
        let now = clock()
        let lifetime = codeLifetime
        let keys = [AttemptLimiter.account(email)]
        if attempts.wait(for: keys, now: now) != nil { throw .refused(.tooManyAttempts) }
        let refusal: Refusal? = try store.withLock { store throws(ServiceFailure) in
            // An unknown address, no code asked for and a wrong code all answer alike.
            guard var reset = store.resetCodes[email], var stored = store.accounts[email] else { return .wrongCode }
            guard !code.isEmpty, reset.code == code else {
                reset.wrongTries += 1
                let void = reset.wrongTries >= Self.maximumWrongCodes
                try records.commit([void ? .delete(kind: "reset", key: email) : .put("reset", email, json: reset)])
                store.resetCodes[email] = void ? nil : reset
                return .wrongCode
            }
            guard now.timeIntervalSince(reset.issued) <= lifetime else { return .expiredCode }
            stored.password = hash
            let signedIn = store.sessions.filter { $0.value == email }.keys
            // The new password, the used code and the sessions signed out commit together.
            try records.commit(
                [.put("account", email, json: stored), .delete(kind: "reset", key: email)]
                    + signedIn.map { .delete(kind: "signin", key: $0) })
            store.accounts[email] = stored
            store.resetCodes[email] = nil
            for session in signedIn { store.sessions[session] = nil }
            return nil
        }
        if refusal == .wrongCode { attempts.recordFailure(keys, now: now) }
        if refusal == nil { attempts.recordSuccess(keys) }
        if let refusal { throw .refused(refusal) }
    }

    static func newCode() -> String {
        var generator = SystemRandomNumberGenerator()
        let digits = String(Int.random(in: 0...999_999, using: &generator))
        return String(repeating: "0", count: 6 - digits.count) + digits
    }

    static func resetMail(to email: String, code: String, lifetime: TimeInterval) -> Mail {
        let minutes = Int((lifetime / 60).rounded(.up))
        let validity = lifetime >= 60 ? "\(minutes) minute\(minutes == 1 ? "" : "s")" : "\(Int(lifetime)) seconds"
        return Mail(
            to: email, subject: "Your Photos password reset code",
            body: "Your password reset code is \(code). Use it to choose a new password; it is valid for \(validity). If you did not ask for it, ignore this mail: your password stays as it is.",
            code: code)
    }
}
