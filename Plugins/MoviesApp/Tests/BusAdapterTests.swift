import FlowKit
import FlowProtocol
import Foundation
import Logging
import MoviesApp
import Testing

/// Each bus adapter against the real handlers through `InProcessServiceTransport`.
@Suite struct BusAdapterTests {
    let clock = TestClock()
    let bus: AppServices
    let transport: InProcessServiceTransport

    init() throws {
        transport = InProcessServiceTransport(try makeInMemoryServices(clock: clock).handlers)
        bus = AppServices.bus(transport: transport)
    }

    @Test func usersRoundTripWithRefusals() throws {
        let created = try bus.users.register(Registration(name: "Ana", nickname: "ana", email: "ana@example.com", password: "secret123", genres: ["drama", "scifi"]))
        #expect(created.genres == ["drama", "scifi"])
        #expect(!created.verified)
        #expect(throws: ServiceFailure.refused(.emailTaken)) { try bus.users.register(registration()) }
        #expect(throws: ServiceFailure.refused(.unverified)) { try bus.users.signIn(email: "ana@example.com", password: "secret123", session: "s1") }
        #expect(throws: ServiceFailure.refused(.invalidCredentials)) { try bus.users.signIn(email: "ana@example.com", password: "wrong", session: "s1") }
        #expect(throws: ServiceFailure.refused(.wrongToken)) { try bus.users.verify(email: "ana@example.com", token: "", session: "s1") }
        clock.advance(by: 601)
        let first = try #require(token(in: try bus.mail.outbox(email: "ana@example.com").last))
        #expect(throws: ServiceFailure.refused(.expiredToken)) { try bus.users.verify(email: "ana@example.com", token: first, session: "s1") }
        try bus.users.resendToken(email: "ana@example.com")
        let mails = try bus.mail.outbox(email: "ana@example.com")
        #expect(mails.count == 2)
        #expect(mails.allSatisfy { $0.to == "ana@example.com" && !$0.subject.isEmpty })
        let second = try #require(token(in: mails.last))
        #expect(try bus.users.verify(email: "ana@example.com", token: second, session: "s1").verified)
        #expect(try bus.users.account(forSession: "s1").nickname == "ana")
        #expect(throws: ServiceFailure.refused(.wrongPassword)) { try bus.users.changePassword(session: "s1", current: "nope", new: "another123") }
        try bus.users.changePassword(session: "s1", current: "secret123", new: "another123")
        try bus.users.signOut(session: "s1")
        #expect(throws: ServiceFailure.refused(.notSignedIn)) { try bus.users.account(forSession: "s1") }
        #expect(try bus.users.signIn(email: "ana@example.com", password: "another123", session: "s2").verified)
        try bus.users.requestPasswordReset(email: "ana@example.com")
        #expect(try bus.mail.outbox(email: "ana@example.com").count == 3)
        #expect(throws: ServiceFailure.refused(.unknownAccount)) { try bus.users.resendToken(email: "bo@example.com") }
    }

    @Test func genresMoviesAndMailRoundTrip() throws {
        #expect(try bus.genres.genres().count == 8)
        #expect(try bus.movies.home(user: "ana").carousels.count == 5)
        #expect(try bus.movies.markWatched(id: "movie:2", user: "ana").watched)
        #expect(try bus.movies.like(id: "actor:3", user: "ana").liked)
        #expect(try bus.movies.details(id: "actor:3", user: "ana").filmography.isEmpty == false)
        #expect(try bus.movies.likes(user: "ana").map(\.id) == ["actor:3"])
        #expect(try bus.movies.home(user: "ana").carousels[3].items.map(\.id) == ["movie:2"])
        #expect(throws: ServiceFailure.refused(.unknownItem)) { try bus.movies.details(id: "movie:0", user: "ana") }
        try bus.mail.send(Mail(to: "bo@example.com", subject: "Hi", body: "Hello there"))
        #expect(try bus.mail.outbox(email: "bo@example.com") == [Mail(to: "bo@example.com", subject: "Hi", body: "Hello there")])
    }

    /// A view model names its session, and the services find who is signed in on it: one call.
    @Test func moviesCallsNamingASessionAreAnsweredForItsUser() throws {
        let movies = try #require(bus.movies as? any SessionMovieService)
        #expect(throws: ServiceFailure.refused(.notSignedIn)) { try movies.details(id: "movie:2", session: "s7") }
        #expect(throws: ServiceFailure.refused(.notSignedIn)) { try movies.like(id: "movie:2", session: "s7") }
        _ = try bus.users.signIn(email: "demo@flowbus.dev", password: "flowbus123", session: "s7")
        #expect(try movies.like(id: "movie:2", session: "s7").liked)
        #expect(try movies.markWatched(id: "movie:2", session: "s7").watched)
        #expect(try movies.details(id: "movie:2", session: "s7").liked)
        #expect(try movies.likes(session: "s7").map(\.id) == ["movie:2"])
        #expect(try movies.home(session: "s7").carousels[3].items.map(\.id) == ["movie:2"])
        // The same user's data as when the user is named.
        #expect(try bus.movies.likes(user: "demo@flowbus.dev").map(\.id) == ["movie:2"])
        #expect(try bus.movies.details(id: "movie:2", user: "someone@else.dev").liked == false)
        try bus.users.signOut(session: "s7")
        #expect(throws: ServiceFailure.refused(.notSignedIn)) { try movies.like(id: "movie:2", session: "s7") }
        #expect(throws: ServiceFailure.refused(.notSignedIn)) { try movies.home(session: "s7") }
        #expect(throws: ServiceFailure.refused(.notSignedIn)) { try movies.likes(session: "s7") }
        #expect(try bus.movies.details(id: "movie:2", user: "demo@flowbus.dev").liked, "a refused like changed nothing")
    }

    @Test func expensesRoundTrip() throws {
        var report = Movies_V1_ExpenseReport()
        report.criadoEm = "22/11/2026"
        #expect(throws: ServiceFailure.refused(.emptyReport)) { try bus.expenses.submit(report, session: "s1") }
        report.totalCentavos = 12_345
        report.totalTexto = "R$ 123,45"
        try bus.expenses.submit(report, session: "s1")
        #expect(try bus.expenses.reports(session: "s1") == [report])
        #expect(try bus.expenses.reports(session: "s2").isEmpty)
    }

    @Test func anUnknownMethodIsAnErrorThatNamesTheMethods() throws {
        let reply = try transport.call(service: "svc.users", ServiceCall(method: "deleteEverything", args: [:]))
        #expect(reply.error.message == "svc.users has no method \"deleteEverything\"")
        #expect(reply.error.hint.contains("signIn"))
        #expect(reply.refusal.isEmpty)
        for service in ["svc.genres", "svc.movies", "svc.mail", "svc.expenses"] {
            #expect(try transport.call(service: service, ServiceCall(method: "nope", args: [:])).error.code == .invalidField)
        }
    }

    @Test func aMissingServiceIsUnavailable() throws {
        let services = AppServices.bus(transport: InProcessServiceTransport([:]))
        do {
            _ = try services.genres.genres()
            Issue.record("expected a failure")
        } catch {
            guard case .unavailable(let reason) = error else { Issue.record("expected unavailable, got \(error)"); return }
            #expect(reason.contains("svc.genres"))
        }
    }
}

extension Flowbus_V1_ServiceCall {
    init(method: String, args: [String: String]) {
        self.init()
        self.method = method
        self.args = args
    }
}

@Suite struct LoggedHandlerTests {
    @Test func loggedHandlersAnswerLikeThePlainOnes() throws {
        let services = try makeInMemoryServices()
        let transport = InProcessServiceTransport(services.handlers(logger: Logger(label: "flowbus.test")))
        let bus = AppServices.bus(transport: transport)
        #expect(throws: ServiceFailure.refused(.invalidCredentials)) { try bus.users.signIn(email: "x@y.z", password: "nope", session: "s1") }
        #expect(try bus.genres.genres().count == 8)
        #expect(try transport.call(service: "svc.movies", ServiceCall(method: "nope", args: [:])).hasError)
    }
}

@Test func theHandlersServeEveryServiceName() throws {
    #expect(Set(try makeInMemoryServices().handlers.keys) == Set(AppServiceName.all))
    #expect(AppServiceName.all == ["svc.users", "svc.genres", "svc.movies", "svc.mail", "svc.expenses"])
}
