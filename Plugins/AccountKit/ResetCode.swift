import AppStore
import Foundation

/// A 6-digit code mailed to an account so its owner can choose a new password, with the count
/// of wrong tries it has had. Both apps keep one per account (a `reset` record by e-mail key).
public struct ResetCode: Codable, Sendable, Equatable {
    /// Wrong codes accepted before the code is void (6 digits must not be guessable by trying).
    public static let maximumWrongTries = 5

    public var code: String
    public var issued: Date
    public var wrongTries = 0

    public init(code: String = ResetCode.sixDigits(), issued: Date) {
        self.code = code
        self.issued = issued
    }

    /// What a typed code is worth.
    public enum Check: Equatable, Sendable {
        case accepted
        /// Not the code; `void`: that was the last try it allowed.
        case wrong(void: Bool)
        /// The code, but older than its lifetime.
        case expired
    }

    /// Checks `typed` (spaces around it ignored) at `now`; a wrong one counts against the code.
    public mutating func check(_ typed: String, now: Date, lifetime: TimeInterval) -> Check {
        let typed = typed.trimmingCharacters(in: .whitespaces)
        guard !typed.isEmpty, typed == code else {
            wrongTries += 1
            return .wrong(void: wrongTries >= Self.maximumWrongTries)
        }
        return now.timeIntervalSince(issued) <= lifetime ? .accepted : .expired
    }

    /// Six random decimal digits, zeros kept ("004217").
    public static func sixDigits() -> String {
        var generator = SystemRandomNumberGenerator()
        let digits = String(Int.random(in: 0...999_999, using: &generator))
        return String(repeating: "0", count: 6 - digits.count) + digits
    }

    /// A lifetime as a person reads it in a mail: "15 minutes", "1 minute", "30 seconds".
    public static func validity(_ lifetime: TimeInterval) -> String {
        guard lifetime >= 60 else { return "\(Int(lifetime)) seconds" }
        let minutes = Int((lifetime / 60).rounded(.up))
        return "\(minutes) minute\(minutes == 1 ? "" : "s")"
    }
}

/// An app's stored account, as far as a password reset changes it.
public protocol PasswordHolder: Codable {
    var password: PasswordHash { get set }
}

extension ResetCode {
    /// What typing a code did.
    public enum Outcome: Sendable, Equatable {
        case changed, wrong, expired
    }

    /// Issues a new code for `email` when it has an account (replacing any earlier one):
    /// committed by `commit` (a `reset` record), then kept in `codes`. Nil for an unknown address.
    public static func issue<Account: PasswordHolder, Failure: Error>(
        for email: String, now: Date, accounts: [String: Account], codes: inout [String: ResetCode],
        commit: (() throws -> [RecordChange]) throws(Failure) -> Void
    ) throws(Failure) -> ResetCode? {
        guard accounts[email] != nil else { return nil }
        let reset = ResetCode(issued: now)
        try commit { [try .put("reset", email, json: reset)] }
        codes[email] = reset
        return reset
    }

    /// Sets `hash` as the password of `email` when `typed` is its code: the new password, the
    /// used code and every session signed in as the account (signed out) are committed together
    /// by `commit` (`account`, `reset` and `signin` records), then changed in memory. A wrong code
    /// counts against it, void after its last try; an unknown address and no code asked for
    /// answer `.wrong` alike.
    public static func reset<Account: PasswordHolder, Failure: Error>(
        email: String, typed: String, hash: PasswordHash, now: Date, lifetime: TimeInterval,
        accounts: inout [String: Account], sessions: inout [String: String], codes: inout [String: ResetCode],
        commit: (() throws -> [RecordChange]) throws(Failure) -> Void
    ) throws(Failure) -> Outcome {
        guard var reset = codes[email], var account = accounts[email] else { return .wrong }
        switch reset.check(typed, now: now, lifetime: lifetime) {
        case .accepted: break
        case .expired: return .expired
        case .wrong(let void):
            try commit { [void ? .delete(kind: "reset", key: email) : try .put("reset", email, json: reset)] }
            codes[email] = void ? nil : reset
            return .wrong
        }
        account.password = hash
        let signedIn = sessions.filter { $0.value == email }.keys
        try commit {
            [try .put("account", email, json: account), .delete(kind: "reset", key: email)]
                + signedIn.map { .delete(kind: "signin", key: $0) }
        }
        accounts[email] = account
        codes[email] = nil
        for session in signedIn { sessions[session] = nil }
        return .changed
    }
}
