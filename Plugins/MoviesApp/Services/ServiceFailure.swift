import AppStore
/// A reason a service refuses a call that the app explains to the person (wrong password,
/// e-mail taken, ...). Travels as `ServiceReply.refusal`.
public struct Refusal: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Sign-in with an unknown e-mail or a wrong password (the two are not told apart).
    public static let invalidCredentials = Refusal(rawValue: "invalidCredentials")
    /// Sign-in to an account whose e-mail is not verified yet.
    public static let unverified = Refusal(rawValue: "unverified")
    public static let emailTaken = Refusal(rawValue: "emailTaken")
    /// A verification token or password reset code that is not the one mailed (or none was asked for).
    public static let wrongToken = Refusal(rawValue: "wrongToken")
    /// A verification token or password reset code past its lifetime.
    public static let expiredToken = Refusal(rawValue: "expiredToken")
    /// A new password shorter than `AccountRules.minimumPasswordLength`.
    public static let passwordTooShort = Refusal(rawValue: "passwordTooShort")
    public static let alreadyVerified = Refusal(rawValue: "alreadyVerified")
    public static let unknownAccount = Refusal(rawValue: "unknownAccount")
    /// Change of password with a wrong current password.
    public static let wrongPassword = Refusal(rawValue: "wrongPassword")
    /// The session is not signed in as any account.
    public static let notSignedIn = Refusal(rawValue: "notSignedIn")
    public static let unknownItem = Refusal(rawValue: "unknownItem")
    /// A report with nothing to reimburse.
    public static let emptyReport = Refusal(rawValue: "emptyReport")
    /// Too many wrong passwords or codes for the account or from the session lately: wait.
    public static let tooManyAttempts = Refusal(rawValue: "tooManyAttempts")

    public var description: String { rawValue }
}

/// Why a service call did not succeed: a refusal the app explains to the person, or a
/// service that could not be reached or misbehaved (the person can only retry later).
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
    /// Commits one record (nothing without a store); a store that fails leaves the service unavailable.
    func commit(_ kind: String, _ key: String, json value: some Encodable) throws(ServiceFailure) {
        do { try self?.put(kind, key, json: value) } catch { throw .unavailable("\(error)") }
    }

    /// Commits `changes` together: all or none.
    func commit(_ changes: @autoclosure () throws -> [RecordChange]) throws(ServiceFailure) {
        guard let self else { return }
        do { try self.apply(try changes()) } catch { throw .unavailable("\(error)") }
    }

    /// Commits one record's removal.
    func commitDelete(_ kind: String, _ key: String) throws(ServiceFailure) {
        do { try self?.delete(kind, key) } catch { throw .unavailable("\(error)") }
    }
}
