import FlowbusTesting
import FlowClient
import FlowHost
import FlowProtocol
import Foundation
import MoviesApp
import Testing

/// movies-services as two replicas sharing one PostgreSQL database (a server of the test's own):
/// the broker spreads calls over both, and each answers as if it were the only one — an
/// account registered through one signs in through the other, a retried call is answered
/// with its first reply whichever replica it reaches, and kill -9 of a replica loses nothing.
@Suite("Services replicas on PostgreSQL", .serialized)
struct ReplicatedServicesEndToEndTests {
    /// The movies manifest with its services run as two replicas on the database at `address`.
    static func manifest(data address: String) throws -> String {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("manifest.yaml")
        let text = try String(contentsOf: url, encoding: .utf8)
        let from = "    command: movies-services\n    args: [\"--lanes\", \"4\"]\n"
        try #require(text.contains(from), "the movies manifest no longer starts its services with \(from)")
        return text.replacingOccurrences(
            of: from, with: "    command: movies-services\n    args: [\"--lanes\", \"4\", \"--data\", \"\(address)\"]\n    replicas: 2\n")
    }

    static func startReplicated() async throws -> (HostFixture, database: String) {
        let server = try PostgresServer.shared()
        let database = "movies_" + UUID().uuidString.prefix(8).lowercased()
        let address = try server.createDatabase(database)
        let host = try await AppJourneysEndToEndTests.startApp(manifest: try manifest(data: address))
        let services = try await host.plugins().filter { $0["name"] as? String == "services" }
        try #require(services.count == 2 && services.allSatisfy { $0["state"] as? String == "running" }, "\(services)")
        return (host, database)
    }

    /// One ServiceCall under the idempotency key `key`: its reply, and the replica that wrote it.
    static func call(
        _ connection: BusConnection, _ service: String, _ method: String, _ args: [String: String], key: String = UUID().uuidString
    ) async throws -> (reply: Flowbus_V1_ServiceReply, writer: String) {
        var call = Flowbus_V1_ServiceCall()
        call.method = method
        call.args = args
        let envelope = try Envelope.wrapping(call, idempotencyKey: key, writer: "test/replicas")
        let answer = try await connection.requester.request(service: service, envelope: envelope)
        return (try answer.unwrap(Flowbus_V1_ServiceReply.self), answer.writer)
    }

    @Test("an account registered through one replica is verified and signed in through either; a retry reaching the other replica is not applied again",
          .timeLimit(.minutes(3)))
    func replicasShareTheirData() async throws {
        let (host, _) = try await Self.startReplicated()
        defer { Task { try? await host.stop() } }
        let connection = try BusConnection(endpoints: try BusEndpoints.announced(by: RunDirectory(path: host.runDirectory)))
        defer { connection.stop() }
        let email = "replica@example.com"

        let registered = try await Self.call(connection, "svc.users", "register", [
            "name": "Rep", "nickname": "rep", "email": email, "password": "secret123", "genres": "drama",
        ])
        #expect(registered.reply.refusal.isEmpty, "\(registered.reply.refusal)")
        let token = try #require(try await Self.call(connection, "svc.mail", "outbox", ["email": email]).reply.result["token"])
        let verified = try await Self.call(connection, "svc.users", "verify", ["email": email, "token": token, "session": "s-rep"])
        #expect(verified.reply.refusal.isEmpty, "\(verified.reply.refusal)")

        // Calls with fresh keys go to both replicas; each sees the account and the signed-in session.
        var writers: Set<String> = []
        for round in 0..<16 {
            let signIn = try await Self.call(connection, "svc.users", "signIn", ["email": email, "password": "secret123", "session": "s-\(round)"])
            #expect(signIn.reply.refusal.isEmpty, "replica \(signIn.writer) does not know the account: \(signIn.reply.refusal)")
            let account = try await Self.call(connection, "svc.users", "account", ["session": "s-rep"])
            #expect(account.reply.refusal.isEmpty, "replica \(account.writer) does not know the session: \(account.reply.refusal)")
            writers.formUnion([signIn.writer, account.writer])
        }
        #expect(writers == ["services/0", "services/1"], "both replicas should have answered: \(writers)")

        // One report submitted, then retried under the same key eight times: answered each time
        // with the first reply, by whichever replica the broker chose, and kept once.
        var report = Movies_V1_ExpenseReport()
        report.totalCentavos = 990
        let submit = ["session": "s-rep", "report": (try report.serializedBytes() as Data).base64EncodedString()]
        let first = try await Self.call(connection, "svc.expenses", "submit", submit, key: "report-1")
        #expect(first.reply.refusal.isEmpty, "\(first.reply.refusal)")
        for _ in 0..<8 {
            let retry = try await Self.call(connection, "svc.expenses", "submit", submit, key: "report-1")
            #expect(retry.reply == first.reply && retry.writer == first.writer)
        }
        for _ in 0..<4 {
            let reports = try await Self.call(connection, "svc.expenses", "reports", ["session": "s-rep"])
            #expect(reports.reply.result["count"] == "1", "replica \(reports.writer): \(reports.reply.result)")
        }

        // kill -9 of the replica that answered first: the retry reaches the other one (or the
        // restarted one, which loads from the database) and is still not applied again.
        let services = try await host.plugins().filter { $0["name"] as? String == "services" }
        let replica = first.writer == "services/1" ? 1 : 0
        let victim = try #require(services.first { $0["replica"] as? Int == replica }?["pid"] as? Int)
        #expect(kill(Int32(victim), SIGKILL) == 0)
        let retried = try await Self.call(connection, "svc.expenses", "submit", submit, key: "report-1")
        #expect(retried.reply == first.reply)
        #expect(try await HostFixture.eventually(timeout: .seconds(20), every: .milliseconds(100)) {
            let now = try await host.plugins().filter { $0["name"] as? String == "services" }
            return now.count == 2 && now.allSatisfy { $0["state"] as? String == "running" && $0["pid"] as? Int != victim }
        })
        // Running is not yet serving: wait until the broker lists the restarted replica's
        // svc.expenses worker (its routing id names its new pid), or every call below may go
        // to the other one.
        #expect(try await HostFixture.eventually(timeout: .seconds(20), every: .milliseconds(100)) {
            let restarted = try await host.plugins().first { $0["name"] as? String == "services" && $0["replica"] as? Int == replica }
            guard let pid = restarted?["pid"] as? Int else { return false }
            let workers = try await host.status()["workers"] as? [[String: Any]] ?? []
            return workers.contains { $0["service"] as? String == "svc.expenses" && ($0["routingID"] as? String ?? "").hasPrefix("services/\(pid)/") }
        })
        var after: Set<String> = []
        for _ in 0..<16 {
            let reports = try await Self.call(connection, "svc.expenses", "reports", ["session": "s-rep"])
            #expect(reports.reply.result["count"] == "1", "after kill -9, replica \(reports.writer): \(reports.reply.result)")
            after.insert(reports.writer)
        }
        #expect(after.contains("services/\(replica)"), "the restarted replica should serve again: \(after)")
    }

    @Test("the whole sign-up journey passes with its service calls spread over two replicas", .timeLimit(.minutes(3)))
    func journeyOverReplicas() async throws {
        let (host, database) = try await Self.startReplicated()
        defer { Task { try? await host.stop() } }
        let journey = try AppJourneysEndToEndTests.journey(on: host)
        defer { journey.stop() }
        _ = try await AppJourneysEndToEndTests.play("signup-to-new-password.yaml", on: journey)
        // What the journey changed is in the database: one account besides none before (the
        // demo account is kept only once its password changes), its verification mail.
        let server = try PostgresServer.shared()
        let kinds = try server.query("SELECT kind FROM movies.records WHERE value IS NOT NULL ORDER BY kind", database: database)
        #expect(kinds.split(separator: "\n").contains("account"), "\(kinds)")
        #expect(kinds.split(separator: "\n").contains("outbox"), "\(kinds)")
    }
}
