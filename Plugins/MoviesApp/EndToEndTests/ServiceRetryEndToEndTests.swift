import FlowbusTesting
import FlowProtocol
import Foundation
import Logging
import Majordomo
import Testing
import ZeroMQ

/// A service call retried with the same idempotency key (as MajordomoServiceTransport's retries
/// are) is applied once: the services process answers the retry from its last replies.
@Suite("Service retries", .serialized)
struct ServiceRetryEndToEndTests {
    static let logger = Logger(label: "flowbus.test.retry")

    static func call(_ client: MajordomoClient, _ method: String, _ args: [String: String], key: String) throws -> Flowbus_V1_ServiceReply {
        var call = Flowbus_V1_ServiceCall()
        call.method = method
        call.args = args
        let body = try Envelope.wrapping(call, idempotencyKey: key, writer: "test/retry").encoded()
        let reply = try client.request(service: "svc.users", body: [body])
        let envelope = try Envelope.decodeChecked(try #require(reply.first))
        return try envelope.unwrap(Flowbus_V1_ServiceReply.self)
    }

    @Test("changePassword sent twice with one key changes the password once; a new key is a new call", .timeLimit(.minutes(2)))
    func retriedChangeIsAppliedOnce() async throws {
        let host = try await AppJourneysEndToEndTests.startApp()
        defer { Task { try? await host.stop() } }
        let broker = try #require(host.endpoint("broker"))
        try await onThread {
            let context = try ZMQContext()
            let client = try MajordomoClient(context: context, endpoint: broker, logger: Self.logger)
            let session = "retry-\(UUID().uuidString.prefix(6))"
            let signedIn = try Self.call(client, "signIn", ["email": "demo@flowbus.dev", "password": "flowbus123", "session": session], key: "k1")
            #expect(signedIn.refusal.isEmpty && !signedIn.hasError, "\(signedIn)")

            let change = ["session": session, "current": "flowbus123", "new": "Changed789"]
            let first = try Self.call(client, "changePassword", change, key: "k2")
            let retry = try Self.call(client, "changePassword", change, key: "k2")
            #expect(first.refusal.isEmpty && !first.hasError, "\(first)")
            #expect(retry == first, "the retry was not answered like the first try: \(retry)")

            // The same call under a new key is a new call: the old password is no longer current.
            let again = try Self.call(client, "changePassword", change, key: "k3")
            #expect(!again.refusal.isEmpty || again.hasError, "the password was not changed by the first call: \(again)")
            let newPassword = try Self.call(client, "signIn", ["email": "demo@flowbus.dev", "password": "Changed789", "session": session + "b"], key: "k4")
            #expect(newPassword.refusal.isEmpty && !newPassword.hasError, "\(newPassword)")
        }
    }
}
