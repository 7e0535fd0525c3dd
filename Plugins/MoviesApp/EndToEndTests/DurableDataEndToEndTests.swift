import FlowbusTesting
import FlowClient
import FlowHost
import FlowProtocol
import Foundation
import MoviesApp
import Testing

/// The app's data outlives its processes: an account, its verification, a signed-in session, a
/// like and a report, committed before each reply, are all there after kill -9 of movies-services
/// and after kill -9 of the host and a new `flowbus up` on the same run directory.
@Suite("Durable app data", .serialized)
struct DurableDataEndToEndTests {
    static let email = "durable@example.com"

    static func call(_ connection: BusConnection, _ service: String, _ method: String, _ args: [String: String] = [:]) async throws -> Flowbus_V1_ServiceReply {
        try await connection.serviceCall(service, method: method, args: args)
    }

    /// Waits until every service of the app serves again (after a restart).
    static func servicesBack(_ host: HostFixture) async throws -> Bool {
        await HostFixture.eventually(timeout: .seconds(30), every: .milliseconds(100)) {
            let workers = (await host.statusIfAnswered()?["broker"] as? [String: Any])?["workersPerService"] as? [String: Int] ?? [:]
            return ["svc.users", "svc.movies", "svc.mail", "svc.expenses"].allSatisfy { (workers[$0] ?? 0) > 0 }
        }
    }

    /// What must survive: the account signs in, the session is still signed in, the like and the report are there.
    static func expectEverythingKept(_ connection: BusConnection, after what: String) async throws {
        let signIn = try await call(connection, "svc.users", "signIn", ["email": email, "password": "secret123", "session": "s-new"])
        #expect(signIn.refusal.isEmpty, "after \(what) the account does not sign in: \(signIn.refusal)")
        let account = try await call(connection, "svc.users", "account", ["session": "s-durable"])
        #expect(account.refusal.isEmpty, "after \(what) the signed-in session was forgotten: \(account.refusal)")
        let likes = try Movies_V1_ItemList(serializedBytes: try await call(connection, "svc.movies", "likes", ["user": email]).payload)
        #expect(likes.items.map { $0.id } == ["actor:1"], "after \(what): \(likes.items.map { $0.id })")
        let reports = try await call(connection, "svc.expenses", "reports", ["session": "s-durable"])
        #expect(reports.result["count"] == "1", "after \(what) the expense report is gone: \(reports.result)")
        let outbox = try await call(connection, "svc.mail", "outbox", ["email": email])
        #expect(outbox.result["count"] == "1", "after \(what) the verification mail is gone: \(outbox.result)")
    }

    @Test("an account, a sign-in, a like and a report survive kill -9 of the services and of the host", .timeLimit(.minutes(3)))
    func dataSurvivesKills() async throws {
        let host = try await AppJourneysEndToEndTests.startApp()
        defer { Task { try? await host.stop() } }
        var connection = try BusConnection(endpoints: try BusEndpoints.announced(by: RunDirectory(path: host.runDirectory)))
        defer { connection.stop() }

        // Committed through the services, each answered.
        let registered = try await Self.call(connection, "svc.users", "register", [
            "name": "Dura", "nickname": "dura", "email": Self.email, "password": "secret123", "genres": "drama",
        ])
        #expect(registered.refusal.isEmpty, "\(registered.refusal)")
        let token = try #require(try await Self.call(connection, "svc.mail", "outbox", ["email": Self.email]).result["token"])
        let verified = try await Self.call(connection, "svc.users", "verify", ["email": Self.email, "token": token, "session": "s-durable"])
        #expect(verified.refusal.isEmpty, "\(verified.refusal)")
        #expect(try await Self.call(connection, "svc.movies", "like", ["id": "actor:1", "user": Self.email]).refusal.isEmpty)
        var report = Movies_V1_ExpenseReport()
        report.totalCentavos = 1250
        let submitted = try await Self.call(connection, "svc.expenses", "submit", ["session": "s-durable", "report": (try report.serializedBytes() as Data).base64EncodedString()])
        #expect(submitted.refusal.isEmpty, "\(submitted.refusal)")

        // kill -9 of the services: the supervisor restarts them, and they load what was committed.
        let services = try await AppJourneysEndToEndTests.kill("services", on: host)
        try await AppJourneysEndToEndTests.restarted("services", was: services, on: host)
        #expect(try await Self.servicesBack(host))
        try await Self.expectEverythingKept(connection, after: "kill -9 of movies-services")

        // kill -9 of the host: its plugins die with it; a new host on the run directory has it all.
        let hostPID = try #require(host.hostPID)
        connection.stop()
        kill(hostPID, SIGKILL)
        #expect(await HostFixture.eventually(timeout: .seconds(10)) { !isAlive(hostPID) })
        let up = try await host.run(["up", "--detach"])
        try #require(up.status == 0, "flowbus up after kill -9 failed:\n\(up.output)\n\(host.hostLog)")
        #expect(try await Self.servicesBack(host))
        connection = try BusConnection(endpoints: try BusEndpoints.announced(by: RunDirectory(path: host.runDirectory)))
        try await Self.expectEverythingKept(connection, after: "kill -9 of the host")
    }

    @Test("a session survives kill -9 of the host: attached again after `flowbus up`, it is on the same screen and carries on",
          .timeLimit(.minutes(3)))
    func sessionSurvivesAHostRestart() async throws {
        let host = try await AppJourneysEndToEndTests.startApp()
        defer { Task { try? await host.stop() } }
        let journey = try AppJourneysEndToEndTests.journey(on: host)
        defer { journey.stop() }
        let client = try await AppJourneysEndToEndTests.openSignedIn(journey)
        let session = client.session
        try await journey.send("select", fields: ["item": "actor:1"])
        try await journey.expect(Expectation(screen: "details", stack: ["home", "details"], phase: .success))
        let before = client.view.navigationVersion

        // kill -9 of the host: every plugin dies with it; the Clone map is in the run directory.
        let hostPID = try #require(host.hostPID)
        kill(hostPID, SIGKILL)
        #expect(await HostFixture.eventually(timeout: .seconds(10)) { !isAlive(hostPID) })
        let up = try await host.run(["up", "--detach"])
        try #require(up.status == 0, "flowbus up after kill -9 failed:\n\(up.output)\n\(host.hostLog)")
        #expect(await HostFixture.eventually(timeout: .seconds(30), every: .milliseconds(200)) {
            ((await host.statusIfAnswered()?["broker"] as? [String: Any])?["workersPerService"] as? [String: Int])?["coord.app"] == 1
        })
        #expect(host.hostLog.contains("clone map restored from its journal"))

        // The same session id, attached again (a local tool's capability): same screen, same user.
        let attached = try await journey.attach(session)
        try await journey.expect(Expectation(screen: "details", stack: ["home", "details"], phase: .success, user: "demo@flowbus.dev"))
        #expect(attached.view.navigationVersion == before)
        // It carries on: back pops one screen, a like is applied once.
        try await journey.send("back")
        try await journey.expect(Expectation(screen: "home", stack: ["home"]))
        try await journey.send("select", fields: ["item": "movie:19"])
        try await journey.expect(Expectation(screen: "details", stack: ["home", "details"], phase: .success))
    }
}
