import AccountKit
import AppStore

/// A reason a service refuses a call, which the app explains to the person. Travels as
/// `ServiceReply.refusal` (the raw value).
public enum Refusal: String, Sendable, CaseIterable, CustomStringConvertible {
    /// register: an account already has this e-mail (compared without case).
    case emailTaken
    /// register: the e-mail breaks `AccountRules.isWellFormedEmail`.
    case invalidEmail
    /// register, resetPassword: shorter than `AccountRules.minimumPasswordLength`.
    case passwordTooShort
    /// register: the name is blank.
    case nameMissing
    /// signIn: unknown e-mail or wrong password (the two are not told apart).
    case invalidCredentials
    /// account: the session is not signed in as any account; like, unlike: no user was named.
    case notSignedIn
    /// resetPassword: not the code last mailed to this address (also for unknown addresses,
    /// for a code already used, and after too many wrong tries).
    case wrongCode
    /// resetPassword: the right code, mailed longer ago than the code lifetime.
    case expiredCode
    /// photo, like, unlike: no photo has this id.
    case unknownPhoto
    /// signIn, resetPassword: too many wrong passwords or codes for the account or from the
    /// session lately (`AttemptLimiter`).
    case tooManyAttempts

    public var description: String { rawValue }

    /// What a person reads: what happened and what to do.
    public var message: String {
        switch self {
        case .emailTaken: "An account with this e-mail already exists. Log in, or use another e-mail."
        case .invalidEmail: "That is not a valid e-mail address. Type one like name@example.com."
        case .passwordTooShort: "The password is too short: use at least \(AccountRules.minimumPasswordLength) characters."
        case .nameMissing: "Enter your name."
        case .invalidCredentials: "The e-mail or the password is wrong. Check both and try again."
        case .notSignedIn: "You are not logged in. Log in to continue."
        case .wrongCode: "That is not the code we sent. Check the latest e-mail, or ask for a new code."
        case .expiredCode: "The code has expired. Ask for a new one."
        case .unknownPhoto: "This photo is no longer available. Go back to the list."
        case .tooManyAttempts: "Too many wrong tries for this account. Wait a few minutes, then try again."
        }
    }
}

/// Why a service call did not succeed: a refusal the app explains to the person, or a service
/// that could not be reached or misbehaved (the person can only retry later).
public enum ServiceFailure: Error, Equatable, Sendable, CustomStringConvertible {
    case refused(Refusal)
    case unavailable(String)

    public var description: String {
        switch self {
        case .refused(let refusal): "refused: \(refusal)"
        case .unavailable(let reason): "unavailable: \(reason)"
        }
    }
}

extension Optional where Wrapped == RecordStore {
    /// Commits `changes` together (nothing without a store); a store that fails leaves the
    /// service unavailable for this call, and the caller leaves its memory as it was.
    func commit(_ changes: @autoclosure () throws -> [RecordChange]) throws(ServiceFailure) {
        guard let self else { return }
        do { try self.apply(try changes()) } catch { throw .unavailable("\(error)") }
    }
}
