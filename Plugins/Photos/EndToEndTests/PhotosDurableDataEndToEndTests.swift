import FlowbusTesting
import FlowClient
import FlowHost
import FlowProtocol
import Foundation
import PhotosApp
import SwiftProtobuf
import Testing

/// The Photos app's data outlives its processes: an account created on the app's screens (which
/// signs the session in), its likes, and a reset code mailed to the demo account are all there
/// after kill -9 of photos-services and after kill -9 of the host and a new `flowbus up`.
@Suite("Photos durable data", .serialized)
struct PhotosDurableDataEndToEndTests {
    static let password = "Secret123"
    static let liked = ["photo:3", "photo:7"]

    static func call(_ connection: BusConnection, _ service: String, _ method: String, _ args: [String: String]) async throws -> Flowbus_V1_ServiceReply {
        try await connection.serviceCall(service, method: method, args: args)
    }

    /// `method` of svc.accounts under the idempotency key `key`, as a plugin's retry sends it: the reply envelope as it came.
    static func keyedCall(_ connection: BusConnection, _ method: String, _ args: [String: String], key: String) async throws -> Envelope {
        var call = Flowbus_V1_ServiceCall()
        call.method = method
        call.args = args
        let envelope = try Envelope.wrapping(call, idempotencyKey: key, writer: "test/photos-retry")
        return try await connection.requester.request(service: "svc.accounts", envelope: envelope)
    }

    /// The photos `email` likes, as svc.photos answers.
    static func likes(_ connection: BusConnection, _ email: String) async throws -> [String] {
        let reply = try await call(connection, "svc.photos", "likes", ["user": email])
        return try Photos_V1_PhotoList(serializedBytes: reply.payload).photos.map(\.id)
    }

    /// What must survive: the account signs in with its password and likes what it liked.
    static func expectAccountKept(_ connection: BusConnection, _ email: String, after what: String) async throws {
        let signIn = try await call(connection, "svc.accounts", "signIn", ["email": email, "password": password, "session": "check-\(UUID().uuidString.prefix(6))"])
        #expect(signIn.refusal.isEmpty, "after \(what) the account does not sign in: \(signIn.refusal)")
        #expect(try await likes(connection, email) == liked, "after \(what) the likes are not kept")
    }

    @Test("an account made on the screens, its sign-in, its likes and a mailed reset code survive kill -9 of the services and of the host",
          .timeLimit(.minutes(3)))
    func dataSurvivesKills() async throws {
        let host = try await PhotosHost.start()
        defer { Task { try? await host.stop() } }
        let email = "durable-\(UUID().uuidString.prefix(6).lowercased())@photos.dev"

        // On the app's screens: create the account (the session is signed in as it), like two photos.
        let journey = try PhotosJourneysEndToEndTests.journey(on: host)
        defer { journey.stop() }
        let client = try await journey.open()
        try await journey.send("createAccount", screen: "welcome")
        try await journey.send(
            "createAccount", fields: ["name": "Dura Ble", "email": email, "password": Self.password, "passwordConfirmation": Self.password],
            screen: "createaccount")
        try await journey.expect(Expectation(screen: "browse", phase: .success, user: email))
        for photo in Self.liked {
            try await journey.send("select", fields: ["photo": photo], screen: "browse")
            try await journey.expect(Expectation(screen: "photo", phase: .success).with(data: ["id": photo]))
            try await journey.send("like")
            try await journey.expect(Expectation(screen: "photo", phase: .success).with(data: ["id": photo, "liked": "true"]))
            try await journey.send("back")
            try await journey.expect(Expectation(screen: "browse", stack: ["browse"], phase: .success))
        }
        var connection = try BusConnection(endpoints: try host.endpoints)
        defer { connection.stop() }
        let requested = try await Self.call(connection, "svc.accounts", "requestPasswordReset", ["email": "demo@photos.dev"])
        #expect(requested.refusal.isEmpty && !requested.hasError, "\(requested)")

        // kill -9 of the services: the supervisor restarts them, and they load what was committed.
        let services = try await host.kill("services")
        try await host.restarted("services", was: services)
        #expect(try await host.servicesServe())
        try await Self.expectAccountKept(connection, email, after: "kill -9 of photos-services")
        let account = try await Self.call(connection, "svc.accounts", "account", ["session": client.session])
        #expect(account.refusal.isEmpty, "after kill -9 of photos-services the screens' session was signed out: \(account.refusal)")
        // The app's own Likes screen, loaded anew from the restarted services, shows both photos.
        try await journey.send("selectTab", fields: ["tab": "likes"])
        try await journey.expect(Expectation(screen: "likes", phase: .success).with(data: [
            "photos": "2", "photos.0.id": Self.liked[0], "photos.1.id": Self.liked[1],
        ]))
        // The code mailed before the kill is still in the outbox and still resets the password.
        let code = try #require(try await Self.call(connection, "svc.mail", "outbox", ["email": "demo@photos.dev"]).result["code"],
                                "the reset mail did not survive kill -9 of photos-services")
        let reset = try await Self.call(connection, "svc.accounts", "resetPassword", ["email": "demo@photos.dev", "code": code, "newPassword": "Renewed789"])
        #expect(reset.refusal.isEmpty && !reset.hasError, "the reset code mailed before the kill was refused: \(reset)")

        // kill -9 of the host: its plugins die with it; a new host on the run directory has it all.
        journey.stop()
        connection.stop()
        let hostPID = try #require(host.fixture.hostPID)
        kill(hostPID, SIGKILL)
        #expect(await PhotosHost.eventually(timeout: .seconds(10)) { !isAlive(hostPID) })
        let up = try await host.fixture.run(["up", "--detach", "--app", "photos"])
        try #require(up.status == 0, "flowbus up --app photos after kill -9 failed:\n\(up.output)\n\(host.fixture.hostLog)")
        #expect(try await host.servicesServe())
        connection = try BusConnection(endpoints: try host.endpoints)
        try await Self.expectAccountKept(connection, email, after: "kill -9 of the host")
        let demo = try await Self.call(connection, "svc.accounts", "signIn", ["email": "demo@photos.dev", "password": "Renewed789", "session": "demo-check"])
        #expect(demo.refusal.isEmpty, "after kill -9 of the host the demo's reset password was lost: \(demo.refusal)")
        let demoOld = try await Self.call(connection, "svc.accounts", "signIn", ["email": "demo@photos.dev", "password": "photos123", "session": "demo-old"])
        #expect(demoOld.refusal == "invalidCredentials", "after kill -9 of the host the demo's old password works again")
    }

    @Test("register retried with its key after kill -9 of photos-services gets the first reply and is applied once", .timeLimit(.minutes(2)))
    func retryAfterRestartIsAnsweredNotApplied() async throws {
        let host = try await PhotosHost.start()
        defer { Task { try? await host.stop() } }
        let email = "retry-\(UUID().uuidString.prefix(6).lowercased())@photos.dev"
        let registration = ["name": "Re Try", "email": email, "password": Self.password, "session": "retry-session"]
        var connection = try BusConnection(endpoints: try host.endpoints)
        defer { connection.stop() }
        let first = try await Self.keyedCall(connection, "register", registration, key: "register-once")
        let firstReply = try first.unwrap(Flowbus_V1_ServiceReply.self)
        #expect(firstReply.refusal.isEmpty && !firstReply.hasError, "\(firstReply)")

        let services = try await host.kill("services")
        try await host.restarted("services", was: services)
        #expect(try await host.servicesServe())
        connection.stop()
        connection = try BusConnection(endpoints: try host.endpoints)

        let retry = try await Self.keyedCall(connection, "register", registration, key: "register-once")
        let retryReply = try retry.unwrap(Flowbus_V1_ServiceReply.self)
        #expect(retryReply.refusal.isEmpty, "the retry was applied again after the restart: \(retryReply.refusal)")
        #expect(retry.payload == first.payload, "the retry's reply is not the first one's")
        #expect(retry.writer == first.writer && retry.sentAtUnixNanos == first.sentAtUnixNanos, "the retry was answered anew")
        let again = try await Self.keyedCall(connection, "register", registration, key: "register-twice").unwrap(Flowbus_V1_ServiceReply.self)
        #expect(again.refusal == "emailTaken", "\(again)")
        let account = try await Self.call(connection, "svc.accounts", "account", ["session": "retry-session"])
        #expect(account.refusal.isEmpty, "the first register's sign-in was lost: \(account.refusal)")
    }
}
