import FlowKit
import FlowProtocol
import MoviesApp
import Testing

@Suite struct SignUpViewModelTests {
    let users = MockUserService()
    let genres = MockGenreService()
    let viewModel: SignUpViewModel
    let log: StateLog

    init() {
        viewModel = SignUpViewModel(session: "s1", users: users, genres: genres)
        log = StateLog(viewModel)
    }

    static let valid = [
        "email": "ana@example.com", "password": "secret123", "passwordConfirmation": "secret123",
        "name": "Ana", "nickname": "ana", "genres": "drama, scifi",
    ]

    func signUp(_ changes: [String: String] = [:]) throws {
        try viewModel.handle(IntentInput(action: "signUp", fields: Self.valid.merging(changes) { $1 }))
    }

    @Test func appearLoadsTheGenres() throws {
        try viewModel.handle(IntentInput(action: "appear"))
        #expect(genres.calls == 1)
        #expect(log.states.count == 2)
        #expect(log.states.first == .loading)
        #expect(log.states.last?.successData?.genres.genres.map(\.id) == ["drama", "scifi"])
    }

    @Test func genresThatDoNotLoadAreAnError() throws {
        genres.result = .failure(.unavailable("down"))
        try viewModel.handle(IntentInput(action: "appear"))
        #expect(log.states.first == .loading)
        #expect(log.states.last?.errorMessage?.contains("Could not load the genres") == true)
    }

    /// Issue 17: an empty form named the e-mail first, though Name is the first field.
    @Test func theFirstProblemIsTheFirstFieldsInFormOrder() throws {
        try signUp(["name": "", "nickname": "", "email": "", "password": "", "passwordConfirmation": "", "genres": ""])
        #expect(log.states.last?.errorMessage == "Enter your name.")
        try signUp(["nickname": "", "email": "", "password": "", "passwordConfirmation": "", "genres": ""])
        #expect(log.states.last?.errorMessage == "Enter a nickname.")
        try signUp(["email": "", "password": "", "passwordConfirmation": "", "genres": ""])
        #expect(log.states.last?.errorMessage == "Enter your e-mail address.")
        try signUp(["password": "", "passwordConfirmation": "", "genres": ""])
        #expect(log.states.last?.errorMessage == "Enter a password.")
        #expect(users.registered.isEmpty)
    }

    /// Issue 17: 300 KB pasted into Name was accepted. Every field has a limit, said when passed,
    /// and each error names its field, so the client puts the focus there.
    @Test(arguments: [
        (["name": String(repeating: "n", count: 81)], "The name is too long: use at most 80 characters.", "name"),
        (["nickname": String(repeating: "n", count: 81)], "The nickname is too long: use at most 80 characters.", "nickname"),
        (["email": String(repeating: "a", count: 250) + "@example.com"], "The e-mail address is too long: use at most 254 characters.", "email"),
        (["password": String(repeating: "p", count: 129)], "The password is too long: use at most 128 characters.", "password"),
        (["passwordConfirmation": "secret124"], "The confirmation does not match the password. Type the same password twice.", "passwordConfirmation"),
        (["genres": ""], "Choose at least one genre.", "genres"),
    ])
    func overlongAndWrongValuesAreRefusedNamingTheirField(changes: [String: String], message: String, field: String) throws {
        try signUp(changes)
        #expect(log.states.last?.errorMessage == message)
        #expect(viewModel.errorField == field)
        #expect(users.registered.isEmpty)
    }

    /// Genres that failed to load can be loaded again from the screen (issue 17: "Genres:
    /// loading…" stayed for good, with no way to try again but going back).
    @Test func genresThatFailedCanBeLoadedAgain() throws {
        genres.result = .failure(.unavailable("down"))
        try viewModel.handle(IntentInput(action: "appear"))
        #expect(viewModel.disabledReason(for: "loadGenres") == nil)
        #expect(viewModel.presentation().components.contains { $0.buttons.buttons.contains { $0.action == "loadGenres" } })
        genres.result = .success([Movies_V1_Genre.with { $0.id = "drama"; $0.name = "Drama" }])
        try viewModel.handle(IntentInput(action: "loadGenres"))
        #expect(genres.calls == 2)
        #expect(log.states.last?.successData?.genres.genres.map(\.id) == ["drama"])
        #expect(viewModel.disabledReason(for: "loadGenres") != nil, "offered again once the genres are loaded")
        #expect(!viewModel.presentation().components.contains { $0.buttons.buttons.contains { $0.action == "loadGenres" } })
    }

    @Test(arguments: [
        (["email": ""], "Enter your e-mail address."),
        (["email": "ana.example.com"], "\"ana.example.com\" is not a valid e-mail address. Type one like name@example.com."),
        (["password": "", "passwordConfirmation": ""], "Enter a password."),
        (["password": "short12", "passwordConfirmation": "short12"], "The password is too short: use at least 8 characters."),
        (["passwordConfirmation": ""], "Type the password again to confirm it."),
        (["passwordConfirmation": "secret124"], "The confirmation does not match the password. Type the same password twice."),
        (["name": " "], "Enter your name."),
        (["nickname": ""], "Enter a nickname."),
        (["genres": ""], "Choose at least one genre."),
        (["genres": " , "], "Choose at least one genre."),
    ])
    func everyRuleHasItsMessageAndCallsNoService(changes: [String: String], message: String) throws {
        try signUp(changes)
        #expect(log.states == [.error(message)])
        #expect(users.calls.isEmpty)
    }

    @Test func aGenreNotInTheLoadedListIsRefused() throws {
        try viewModel.handle(IntentInput(action: "appear"))
        try signUp(["genres": "drama,western"])
        #expect(log.states.last == .error("\"western\" is not one of the genres. Choose genres from the list."))
        #expect(users.calls.isEmpty)
        #expect(log.lastData?.genres.genres.count == 2, "the genre list stays on screen with the error")
    }

    @Test func successRegistersAndSaysTheCodeWasSent() throws {
        users.registerResult = .success(account(verified: false))
        try signUp()
        #expect(users.registered == [Registration(name: "Ana", nickname: "ana", email: "ana@example.com", password: "secret123", genres: ["drama", "scifi"])])
        #expect(log.states.first == .loading)
        #expect(log.states.last?.successNotice == "verificationSent")
        let data = try #require(log.states.last?.successData)
        #expect(data.account.email == "ana@example.com")
    }

    @Test func aTakenEmailIsExplained() throws {
        users.registerResult = .failure(.refused(.emailTaken))
        try signUp()
        #expect(log.states == [.loading, .error("An account already exists for ana@example.com. Sign in instead, or use another e-mail.")])
    }

    @Test func unknownActionsAreRefused() {
        #expect(throws: IntentRefusal.self) { try viewModel.handle(IntentInput(action: "register")) }
    }
}
