import FlowKit
import FlowProtocol
import MoviesApp
import Testing

/// Home, details, likes and settings: the screens of a signed-in person.
@Suite struct SignedInViewModelTests {
    let users = MockUserService()
    let movies = MockMovieService()

    init() {
        users.accountResult = .success(account())
    }

    @Test func homeLoadsTheFeedOfTheSessionsAccount() throws {
        let home = HomeViewModel(session: "s1", users: users, movies: movies)
        let log = StateLog(home)
        try home.handle(IntentInput(action: "appear"))
        #expect(users.calls == ["account s1"])
        #expect(movies.calls == ["home ana@example.com"])
        #expect(log.states.count == 2)
        #expect(log.states.first == .loading)
        #expect(log.states.last?.successData?.home.carousels.first?.id == "nowPlaying")
    }

    @Test func homeOfASignedOutSessionSaysToSignIn() throws {
        users.accountResult = .failure(.refused(.notSignedIn))
        let home = HomeViewModel(session: "s1", users: users, movies: movies)
        let log = StateLog(home)
        try home.handle(IntentInput(action: "appear"))
        #expect(log.states == [.loading, .error("You are signed out. Sign in again to see your home.")])
        #expect(movies.calls.isEmpty)
    }

    @Test func homeWithTheMovieServiceDownIsAnError() throws {
        movies.failure = .unavailable("down")
        let home = HomeViewModel(session: "s1", users: users, movies: movies)
        let log = StateLog(home)
        try home.handle(IntentInput(action: "appear"))
        #expect(log.states == [.loading, .error("The movie service is not available right now. Try again in a moment.")])
    }

    @Test func detailsLoadTheScreensItemThenLikeAndMarkWatchedShowItAgain() throws {
        let details = DetailsViewModel(session: "s1", users: users, movies: movies)
        let log = StateLog(details)
        try details.handle(IntentInput(action: "appear", params: ["item": "movie:12"]))
        try details.handle(IntentInput(action: "like", params: ["item": "movie:12"]))
        try details.handle(IntentInput(action: "markWatched", params: ["item": "movie:12"]))
        #expect(movies.calls == ["details movie:12 ana@example.com", "like movie:12 ana@example.com", "markWatched movie:12 ana@example.com"])
        #expect(log.states.map(\.phase) == [.loading, .success, .loading, .success, .loading, .success])
        #expect(log.states[3].successData?.details.liked == true)
        #expect(log.states[5].successData?.details.watched == true)
        #expect(log.lastData?.details.item.id == "movie:12")
    }

    /// Over the bus the movie service resolves the session itself: the like is one call, and
    /// the user service is not asked.
    @Test func detailsMakeOneCallWhenTheMovieServiceResolvesSessions() throws {
        let direct = SessionResolvingMovies()
        let details = DetailsViewModel(session: "s1", users: users, movies: direct)
        let log = StateLog(details)
        try details.handle(IntentInput(action: "appear", params: ["item": "movie:12"]))
        try details.handle(IntentInput(action: "like", params: ["item": "movie:12"]))
        try details.handle(IntentInput(action: "markWatched", params: ["item": "movie:12"]))
        #expect(direct.calls == ["details movie:12 session s1", "like movie:12 session s1", "markWatched movie:12 session s1"])
        #expect(users.calls.isEmpty)
        #expect(log.states[3].successData?.details.liked == true)
        direct.failure = .refused(.notSignedIn)
        try details.handle(IntentInput(action: "like", params: ["item": "movie:12"]))
        #expect(log.states.last == .error(DetailsViewModel.signedOut))
    }

    @Test func homeAndLikesMakeOneCallWhenTheMovieServiceResolvesSessions() throws {
        let direct = SessionResolvingMovies()
        try HomeViewModel(session: "s1", users: users, movies: direct).handle(IntentInput(action: "appear"))
        let likes = LikesViewModel(session: "s1", users: users, movies: direct)
        let log = StateLog(likes)
        try likes.handle(IntentInput(action: "appear"))
        #expect(direct.calls == ["home session s1", "likes session s1"])
        #expect(users.calls.isEmpty)
        #expect(log.lastData?.items.items.map(\.id) == ["movie:1"])
    }

    @Test func detailsWithoutAnItemAreRefused() {
        let details = DetailsViewModel(session: "s1", users: users, movies: movies)
        #expect(throws: IntentRefusal.self) { try details.handle(IntentInput(action: "appear")) }
        #expect(throws: IntentRefusal.self) { try details.handle(IntentInput(action: "select", params: ["item": "movie:1"])) }
        #expect(movies.calls.isEmpty)
    }

    @Test func detailsOfAnUnknownItemAreAnError() throws {
        movies.failure = .refused(.unknownItem)
        let details = DetailsViewModel(session: "s1", users: users, movies: movies)
        let log = StateLog(details)
        try details.handle(IntentInput(action: "appear", params: ["item": "movie:999"]))
        #expect(log.states == [.loading, .error("\"movie:999\" is not in the catalog. Go back and choose another title.")])
    }

    @Test func likesLoadTheLikedItems() throws {
        let likes = LikesViewModel(session: "s1", users: users, movies: movies)
        let log = StateLog(likes)
        try likes.handle(IntentInput(action: "appear"))
        #expect(movies.calls == ["likes ana@example.com"])
        #expect(log.states.first == .loading)
        #expect(log.states.last?.successData?.items.items.map(\.id) == ["movie:1"])
        #expect(throws: IntentRefusal.self) { try likes.handle(IntentInput(action: "like")) }
    }

    @Test func settingsShowTheAccountAndLogOut() throws {
        let settings = SettingsViewModel(session: "s1", users: users)
        let log = StateLog(settings)
        try settings.handle(IntentInput(action: "appear"))
        #expect(log.states.last?.successData?.account.email == "ana@example.com")
        try settings.handle(IntentInput(action: "logOut"))
        #expect(users.calls == ["account s1", "signOut s1"])
        #expect(log.states.map(\.phase) == [.loading, .success, .loading, .success])
        #expect(log.lastNotice == "loggedOut")
        #expect(throws: IntentRefusal.self) { try settings.handle(IntentInput(action: "changePassword")) }
    }

    /// Issue 17: Settings showed the genres' ids ("scifi") where sign-up shows their names.
    @Test func settingsNameTheGenresAndShowIdsOnlyWhenTheGenreServiceIsDown() throws {
        var record = account()
        record.genres = ["drama", "scifi"]
        users.accountResult = .success(record)
        let genres = MockGenreService()
        let settings = SettingsViewModel(session: "s1", users: users, genres: genres)
        try settings.handle(IntentInput(action: "appear"))
        func genresLine(_ viewModel: SettingsViewModel) -> String? {
            viewModel.presentation().components.map(\.text.text).first { $0.hasPrefix("Genres:") }
        }
        #expect(genresLine(settings) == "Genres: Drama, Science fiction")
        genres.result = .failure(.unavailable("down"))
        let without = SettingsViewModel(session: "s1", users: users, genres: genres)
        try without.handle(IntentInput(action: "appear"))
        #expect(genresLine(without) == "Genres: drama, scifi")
    }

    @Test func settingsOfASignedOutSessionSayToSignIn() throws {
        users.accountResult = .failure(.refused(.notSignedIn))
        let settings = SettingsViewModel(session: "s1", users: users)
        let log = StateLog(settings)
        try settings.handle(IntentInput(action: "appear"))
        #expect(log.states == [.loading, .error("You are signed out. Sign in again to see your settings.")])
    }
}
