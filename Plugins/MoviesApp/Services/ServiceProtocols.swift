import FlowProtocol
import Foundation

public typealias Account = Movies_V1_Account

/// The wall clock as the services read it; tests inject their own.
public typealias AppClock = @Sendable () -> Date

/// Accounts, passwords, verification tokens and which account each session is signed in as.
/// E-mail addresses are compared without regard to case.
public protocol UserService: AnyObject {
    /// Creates an unverified account and mails it a 6-digit token. Refuses `emailTaken`.
    func register(_ registration: Registration) throws(ServiceFailure) -> Account
    /// Checks the token; on success the account is verified and `session` signed in as it.
    /// Refuses `unknownAccount`, `alreadyVerified`, `wrongToken`, `expiredToken`.
    func verify(email: String, token: String, session: String) throws(ServiceFailure) -> Account
    /// Mails a new token, replacing the old one. Refuses `unknownAccount`, `alreadyVerified`.
    func resendToken(email: String) throws(ServiceFailure)
    /// Refuses `invalidCredentials` (unknown e-mail or wrong password) and `unverified`.
    func signIn(email: String, password: String, session: String) throws(ServiceFailure) -> Account
    /// The account `session` is signed in as; refuses `notSignedIn`.
    func account(forSession session: String) throws(ServiceFailure) -> Account
    /// Succeeds also when the session was not signed in.
    func signOut(session: String) throws(ServiceFailure)
    /// Refuses `notSignedIn`, `wrongPassword`.
    func changePassword(session: String, current: String, new: String) throws(ServiceFailure)
    /// Mails a 6-digit reset code (replacing any earlier one); succeeds for unknown addresses
    /// too, mailing nothing and revealing nothing.
    func requestPasswordReset(email: String) throws(ServiceFailure)
    /// Sets a new password with the mailed code, which is then used up, and signs out every
    /// session signed in as the account. Refuses `wrongToken` (also for an unknown address or
    /// no code asked for; five wrong tries void the code), `expiredToken`, `passwordTooShort`,
    /// `tooManyAttempts`.
    func resetPassword(email: String, code: String, newPassword: String) throws(ServiceFailure)
}

public protocol GenreService: AnyObject {
    func genres() throws(ServiceFailure) -> [Movies_V1_Genre]
}

/// Movies, series and actors, and each user's (by account e-mail) likes and watch history.
public protocol MovieService: AnyObject {
    /// Five carousels in order: nowPlaying, upcoming, popularActors, recentlyWatched, latestEpisodes.
    func home(user: String) throws(ServiceFailure) -> Movies_V1_HomeFeed
    /// Refuses `unknownItem`.
    func details(id: String, user: String) throws(ServiceFailure) -> Movies_V1_Details
    /// Toggles the like of `id` (a second like takes it back); returns the details after.
    func like(id: String, user: String) throws(ServiceFailure) -> Movies_V1_Details
    /// Marks `id` watched now (watching again moves it to the front of "recently watched").
    func markWatched(id: String, user: String) throws(ServiceFailure) -> Movies_V1_Details
    /// The liked items, oldest like first.
    func likes(user: String) throws(ServiceFailure) -> [Movies_V1_Item]
}

/// A movie service that finds the user signed in on a session itself, so that a view model makes
/// one call instead of asking `UserService.account(forSession:)` first: the bus adapter is one,
/// since the services process that answers `svc.movies` also holds the sessions. Each refuses
/// `notSignedIn` for a session with no one signed in.
public protocol SessionMovieService: MovieService {
    func home(session: String) throws(ServiceFailure) -> Movies_V1_HomeFeed
    func likes(session: String) throws(ServiceFailure) -> [Movies_V1_Item]
    func details(id: String, session: String) throws(ServiceFailure) -> Movies_V1_Details
    func like(id: String, session: String) throws(ServiceFailure) -> Movies_V1_Details
    func markWatched(id: String, session: String) throws(ServiceFailure) -> Movies_V1_Details
}

extension MovieService {
    /// This service for calls naming a session: itself when it resolves sessions (one call), else
    /// a wrapper that asks `users` who is signed in on the session first (two calls).
    public func resolvingSessions(with users: any UserService) -> any SessionMovieService {
        (self as? any SessionMovieService) ?? UserResolvingMovies(users: users, movies: self)
    }
}

/// Any movie service as a `SessionMovieService`: each call naming a session asks `users` for the
/// account signed in on it, then calls `movies` for that account's e-mail.
final class UserResolvingMovies: SessionMovieService {
    let users: any UserService
    let movies: any MovieService

    init(users: any UserService, movies: any MovieService) {
        self.users = users
        self.movies = movies
    }

    private func user(of session: String) throws(ServiceFailure) -> String { try users.account(forSession: session).email }

    func home(user: String) throws(ServiceFailure) -> Movies_V1_HomeFeed { try movies.home(user: user) }
    func details(id: String, user: String) throws(ServiceFailure) -> Movies_V1_Details { try movies.details(id: id, user: user) }
    func like(id: String, user: String) throws(ServiceFailure) -> Movies_V1_Details { try movies.like(id: id, user: user) }
    func markWatched(id: String, user: String) throws(ServiceFailure) -> Movies_V1_Details { try movies.markWatched(id: id, user: user) }
    func likes(user: String) throws(ServiceFailure) -> [Movies_V1_Item] { try movies.likes(user: user) }

    func home(session: String) throws(ServiceFailure) -> Movies_V1_HomeFeed { try movies.home(user: user(of: session)) }
    func likes(session: String) throws(ServiceFailure) -> [Movies_V1_Item] { try movies.likes(user: user(of: session)) }
    func details(id: String, session: String) throws(ServiceFailure) -> Movies_V1_Details {
        try movies.details(id: id, user: user(of: session))
    }
    func like(id: String, session: String) throws(ServiceFailure) -> Movies_V1_Details { try movies.like(id: id, user: user(of: session)) }
    func markWatched(id: String, session: String) throws(ServiceFailure) -> Movies_V1_Details {
        try movies.markWatched(id: id, user: user(of: session))
    }
}

public protocol MailService: AnyObject {
    func send(_ mail: Mail) throws(ServiceFailure)
    /// Every mail sent to `email`, newest last.
    func outbox(email: String) throws(ServiceFailure) -> [Mail]
}

public protocol ExpenseService: AnyObject {
    /// Registers the report for the person of `session`. Refuses `emptyReport` (total not above zero).
    func submit(_ report: Movies_V1_ExpenseReport, session: String) throws(ServiceFailure)
    /// The reports registered from `session`, oldest first.
    func reports(session: String) throws(ServiceFailure) -> [Movies_V1_ExpenseReport]
}
