import FlowKit
import FlowProtocol
import Foundation
import MoviesApp
import Testing

/// The real view models, over the bus adapters, over the real handlers and in-memory services.
@Suite struct AppOverBusTests {
    let clock = TestClock()
    let backend: AppServices
    let viewModels: [String: ViewModelRuntime.Factory]

    init() throws {
        backend = try makeInMemoryServices(clock: clock)
        let bus = AppServices.bus(transport: InProcessServiceTransport(backend.handlers))
        viewModels = AppViewModels.factories(services: bus, clock: clock.now)
    }

    func make(_ kind: String, session: String = "s1") throws -> ViewModel {
        let factory = try #require(viewModels[kind])
        return factory(session)
    }

    @Test func everyScreenKindHasAViewModel() {
        #expect(Set(viewModels.keys) == ["signin", "signup", "emailverification", "forgotpassword", "resetpassword", "home", "details", "likes", "settings", "changepassword", "expenses"])
        for (kind, make) in viewModels { #expect(type(of: make("s1")).screen == kind) }
    }

    @Test func signUpVerifyBrowseLikeAndLogOut() throws {
        let signUp = try make("signup")
        try signUp.handle(IntentInput(action: "appear"))
        #expect(signUp.shownData?.genres.genres.count == 8)
        try signUp.handle(IntentInput(action: "signUp", fields: [
            "email": "ana@example.com", "password": "secret123", "passwordConfirmation": "secret123",
            "name": "Ana", "nickname": "ana", "genres": "drama,comedy",
        ]))
        #expect(signUp.data?.notice?.code == "verificationSent")

        let signIn = try make("signin")
        try signIn.handle(IntentInput(action: "logIn", fields: ["email": "ana@example.com", "password": "secret123"]))
        #expect(signIn.state.errorMessage != nil)
        #expect(signIn.data?.notice?.code == "unverified")

        let verification = try make("emailverification")
        let code = try #require(token(in: try backend.mail.outbox(email: "ana@example.com").last))
        try verification.handle(IntentInput(action: "verify", fields: ["token": code], params: ["email": "ana@example.com"]))
        #expect(verification.data?.notice?.code == "verified")

        let details = try make("details")
        try details.handle(IntentInput(action: "appear", params: ["item": "series:2"]))
        try details.handle(IntentInput(action: "markWatched", params: ["item": "episode:2-1-1"]))
        try details.handle(IntentInput(action: "like", params: ["item": "movie:7"]))
        #expect(details.shownData?.details.liked == true)

        let home = try make("home")
        try home.handle(IntentInput(action: "appear"))
        let carousels = try #require(home.state.successData?.home.carousels)
        #expect(carousels[3].items.map(\.id) == ["episode:2-1-1"])
        #expect(carousels[4].items.map(\.id) == ["episode:2-1-2"])

        let likes = try make("likes")
        try likes.handle(IntentInput(action: "appear"))
        #expect(likes.shownData?.items.items.map(\.id) == ["movie:7"])

        let settings = try make("settings")
        try settings.handle(IntentInput(action: "logOut"))
        #expect(settings.data?.notice?.code == "loggedOut")
        try home.handle(IntentInput(action: "appear"))
        #expect(home.state == .error(HomeViewModel.signedOut))
    }

    @Test func theDemoAccountSignsInAndRegistersAReport() throws {
        let signIn = try make("signin", session: "s2")
        try signIn.handle(IntentInput(action: "logIn", fields: ["email": "demo@flowbus.dev", "password": "flowbus123"]))
        #expect(signIn.state.successNotice == "signedIn")
        let expenses = try make("expenses", session: "s2")
        try expenses.handle(IntentInput(action: "adicionar", fields: ["titulo": "Monitor", "tipo": "1", "valor": "1.234,56"]))
        try expenses.handle(IntentInput(action: "registrar"))
        #expect(expenses.data?.notice?.code == "reportRegistered")
        #expect(try backend.expenses.reports(session: "s2").map(\.totalTexto) == ["R$ 1.234,56"])
    }
}
