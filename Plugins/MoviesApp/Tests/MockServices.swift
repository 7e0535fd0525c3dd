import FlowKit
import FlowProtocol
import Foundation
import MoviesApp

/// Hand-written mocks of the app's services: each answers what the test set and records calls.
final class MockUserService: UserService {
    var calls: [String] = []
    var registered: [Registration] = []
    var registerResult: Result<Account, ServiceFailure> = .failure(.unavailable("not set"))
    var verifyResult: Result<Account, ServiceFailure> = .failure(.unavailable("not set"))
    var resendResult: Result<Void, ServiceFailure> = .success(())
    var signInResult: Result<Account, ServiceFailure> = .failure(.unavailable("not set"))
    var accountResult: Result<Account, ServiceFailure> = .failure(.refused(.notSignedIn))
    var signOutResult: Result<Void, ServiceFailure> = .success(())
    var changePasswordResult: Result<Void, ServiceFailure> = .success(())
    var resetResult: Result<Void, ServiceFailure> = .success(())
    var resetPasswordResult: Result<Void, ServiceFailure> = .success(())

    func register(_ registration: Registration) throws(ServiceFailure) -> Account {
        calls.append("register \(registration.email)")
        registered.append(registration)
        return try registerResult.get()
    }

    func verify(email: String, token: String, session: String) throws(ServiceFailure) -> Account {
        calls.append("verify \(email) \(token) \(session)")
        return try verifyResult.get()
    }

    func resendToken(email: String) throws(ServiceFailure) {
        calls.append("resendToken \(email)")
        try resendResult.get()
    }

    func signIn(email: String, password: String, session: String) throws(ServiceFailure) -> Account {
        calls.append("signIn \(email) \(password) \(session)")
        return try signInResult.get()
    }

    func account(forSession session: String) throws(ServiceFailure) -> Account {
        calls.append("account \(session)")
        return try accountResult.get()
    }

    func signOut(session: String) throws(ServiceFailure) {
        calls.append("signOut \(session)")
        try signOutResult.get()
    }

    func changePassword(session: String, current: String, new: String) throws(ServiceFailure) {
        calls.append("changePassword \(session) \(current) \(new)")
        try changePasswordResult.get()
    }

    func requestPasswordReset(email: String) throws(ServiceFailure) {
        calls.append("requestPasswordReset \(email)")
        try resetResult.get()
    }

    func resetPassword(email: String, code: String, newPassword: String) throws(ServiceFailure) {
        calls.append("resetPassword \(email) \(code) \(newPassword)")
        try resetPasswordResult.get()
    }
}

final class MockGenreService: GenreService {
    var calls = 0
    var result: Result<[Movies_V1_Genre], ServiceFailure> = .success([genre("drama", "Drama"), genre("scifi", "Science fiction")])

    func genres() throws(ServiceFailure) -> [Movies_V1_Genre] {
        calls += 1
        return try result.get()
    }
}

class MockMovieService: MovieService {
    var calls: [String] = []
    var failure: ServiceFailure?

    func answer<T>(_ call: String, _ value: T) throws(ServiceFailure) -> T {
        calls.append(call)
        if let failure { throw failure }
        return value
    }

    func home(user: String) throws(ServiceFailure) -> Movies_V1_HomeFeed {
        var feed = Movies_V1_HomeFeed()
        feed.carousels = [Movies_V1_Carousel()]
        feed.carousels[0].id = "nowPlaying"
        return try answer("home \(user)", feed)
    }

    func details(id: String, user: String) throws(ServiceFailure) -> Movies_V1_Details {
        try answer("details \(id) \(user)", mockDetails(id))
    }

    func like(id: String, user: String) throws(ServiceFailure) -> Movies_V1_Details {
        var details = mockDetails(id)
        details.liked = true
        return try answer("like \(id) \(user)", details)
    }

    func markWatched(id: String, user: String) throws(ServiceFailure) -> Movies_V1_Details {
        var details = mockDetails(id)
        details.watched = true
        return try answer("markWatched \(id) \(user)", details)
    }

    func likes(user: String) throws(ServiceFailure) -> [Movies_V1_Item] {
        var item = Movies_V1_Item()
        item.id = "movie:1"
        return try answer("likes \(user)", [item])
    }
}

/// A movie service that, like the bus adapter, takes the session instead of its user; its calls
/// are recorded as the plain mock's, with "session <id>" where the user would be.
final class SessionResolvingMovies: MockMovieService, SessionMovieService {
    func home(session: String) throws(ServiceFailure) -> Movies_V1_HomeFeed { try home(user: "session \(session)") }
    func likes(session: String) throws(ServiceFailure) -> [Movies_V1_Item] { try likes(user: "session \(session)") }
    func details(id: String, session: String) throws(ServiceFailure) -> Movies_V1_Details { try details(id: id, user: "session \(session)") }
    func like(id: String, session: String) throws(ServiceFailure) -> Movies_V1_Details { try like(id: id, user: "session \(session)") }
    func markWatched(id: String, session: String) throws(ServiceFailure) -> Movies_V1_Details {
        try markWatched(id: id, user: "session \(session)")
    }
}

final class MockExpenseService: ExpenseService {
    var submitted: [Movies_V1_ExpenseReport] = []
    var failure: ServiceFailure?

    func submit(_ report: Movies_V1_ExpenseReport, session: String) throws(ServiceFailure) {
        if let failure { throw failure }
        submitted.append(report)
    }

    func reports(session: String) throws(ServiceFailure) -> [Movies_V1_ExpenseReport] { submitted }
}

func genre(_ id: String, _ name: String) -> Movies_V1_Genre {
    var genre = Movies_V1_Genre()
    genre.id = id
    genre.name = name
    return genre
}

func mockDetails(_ id: String) -> Movies_V1_Details {
    var details = Movies_V1_Details()
    details.item.id = id
    return details
}

func account(_ email: String = "ana@example.com", name: String = "Ana", verified: Bool = true) -> Account {
    var account = Account()
    account.email = email
    account.name = name
    account.verified = verified
    return account
}

/// Every state a view model publishes, in order, with the data it carried.
final class StateLog {
    var states: [ViewModelState] = []
    var data: [ScreenPayload?] = []

    init(_ viewModel: ViewModel) {
        viewModel.onChange = { [unowned self] state, data in
            self.states.append(state)
            self.data.append(data)
        }
    }

    var lastData: ScreenData? { (data.last ?? nil)?.decode(ScreenData.self) }
    var lastNotice: String { (data.last ?? nil)?.notice?.code ?? "" }
}

extension ViewModel {
    /// The movies payload last shown.
    var shownData: ScreenData? { shown(ScreenData.self) }
}

extension ViewModelState {
    var successData: ScreenData? {
        if case .success(let payload) = self { return payload.decode(ScreenData.self) }
        return nil
    }

    var successNotice: String? {
        if case .success(let payload) = self { return payload.notice?.code ?? "" }
        return nil
    }

    var errorMessage: String? {
        if case .error(let message) = self { return message }
        return nil
    }
}
