import Foundation

/// The wall clock as the services read it; tests inject their own.
public typealias PhotosClock = @Sendable () -> Date

/// Accounts, passwords, reset codes and which account each session is signed in as.
/// E-mail addresses are compared without regard to case. No e-mail verification: an account
/// can sign in as soon as it is registered.
public protocol AccountService: AnyObject {
    /// Creates an account and, when `session` is not empty, signs that session in as it.
    /// Refuses `emailTaken`, `invalidEmail`, `passwordTooShort`, `nameMissing`.
    func register(name: String, email: String, password: String, session: String) throws(ServiceFailure) -> Photos_V1_Account
    /// Refuses `invalidCredentials` (unknown e-mail or wrong password).
    func signIn(email: String, password: String, session: String) throws(ServiceFailure) -> Photos_V1_Account
    /// The account `session` is signed in as; refuses `notSignedIn`.
    func account(forSession session: String) throws(ServiceFailure) -> Photos_V1_Account
    /// Succeeds also when the session was not signed in.
    func signOut(session: String) throws(ServiceFailure)
    /// Mails a 6-digit reset code that replaces any earlier one. Succeeds for unknown
    /// addresses too (mailing nothing), so the answer reveals nothing.
    func requestPasswordReset(email: String) throws(ServiceFailure)
    /// Sets a new password with the code last mailed; the code is then used up and every
    /// session of the account signed out. Refuses `wrongCode`, `expiredCode`, `passwordTooShort`.
    func resetPassword(email: String, code: String, newPassword: String) throws(ServiceFailure)
}

/// The catalog's photos with everyone's likes. `user` is an account e-mail (compared without
/// case); an empty user likes nothing.
public protocol PhotoService: AnyObject {
    /// Every photo in catalog order, each with its likes count and whether `user` likes it.
    func feed(user: String) throws(ServiceFailure) -> [Photos_V1_Photo]
    /// Refuses `unknownPhoto`.
    func photo(id: String, user: String) throws(ServiceFailure) -> Photos_V1_Photo
    /// Adds `user`'s like; liking again changes nothing (a retried call counts once).
    /// Returns the photo after. Refuses `unknownPhoto`, and `notSignedIn` when `user` is empty.
    func like(id: String, user: String) throws(ServiceFailure) -> Photos_V1_Photo
    /// Takes `user`'s like back; unliking a photo not liked changes nothing. Returns the photo
    /// after. Refuses `unknownPhoto`, and `notSignedIn` when `user` is empty.
    func unlike(id: String, user: String) throws(ServiceFailure) -> Photos_V1_Photo
    /// The photos `user` likes, oldest like first.
    func likes(user: String) throws(ServiceFailure) -> [Photos_V1_Photo]
}

public protocol MailService: AnyObject {
    func send(_ mail: Mail) throws(ServiceFailure)
    /// Every mail sent to `email` (compared without case), newest last.
    func outbox(email: String) throws(ServiceFailure) -> [Mail]
}
