import FlowKit
import FlowProtocol
import Foundation
import PhotosApp
import Testing

/// Each bus adapter against the real handlers through a recording in-process transport.
@Suite struct BusAdapterTests {
    let clock = TestClock()
    let transport: RecordingTransport
    let bus: PhotosServices

    init() throws {
        transport = RecordingTransport(try makeServices(clock: clock, codeLifetime: 600).handlers)
        bus = PhotosServices.bus(transport: transport)
    }

    @Test func accountsRoundTripWithRefusals() throws {
        let created = try bus.accounts.register(name: "Ana", email: "Ana@Example.com", password: "secret123", session: "s1")
        #expect(created.email == "ana@example.com")
        #expect(transport.sent.last == .init(
            service: "svc.accounts", method: "register",
            args: ["name": "Ana", "email": "Ana@Example.com", "password": "secret123", "session": "s1"]))
        #expect(try bus.accounts.account(forSession: "s1") == created)
        #expect(throws: ServiceFailure.refused(.emailTaken)) { try bus.accounts.register(name: "Ana", email: "ana@example.com", password: "secret123", session: "") }
        #expect(throws: ServiceFailure.refused(.invalidCredentials)) { try bus.accounts.signIn(email: "ana@example.com", password: "wrong-one", session: "s2") }
        try bus.accounts.signOut(session: "s1")
        #expect(throws: ServiceFailure.refused(.notSignedIn)) { try bus.accounts.account(forSession: "s1") }
        #expect(try bus.accounts.signIn(email: "ana@example.com", password: "secret123", session: "s2") == created)
    }

    @Test func passwordResetThroughTheBus() throws {
        try bus.accounts.requestPasswordReset(email: "demo@photos.dev")
        let mails = try bus.mail.outbox(email: "demo@photos.dev")
        #expect(mails.count == 1)
        let sent = try #require(code(in: mails.last))
        #expect(mails.last?.code == sent)
        #expect(throws: ServiceFailure.refused(.wrongCode)) { try bus.accounts.resetPassword(email: "demo@photos.dev", code: otherCode(than: sent), newPassword: "another123") }
        clock.advance(by: 601)
        #expect(throws: ServiceFailure.refused(.expiredCode)) { try bus.accounts.resetPassword(email: "demo@photos.dev", code: sent, newPassword: "another123") }
        try bus.accounts.requestPasswordReset(email: "demo@photos.dev")
        let fresh = try #require(code(in: try bus.mail.outbox(email: "demo@photos.dev").last))
        try bus.accounts.resetPassword(email: "demo@photos.dev", code: fresh, newPassword: "another123")
        #expect(transport.sent.last?.args == ["email": "demo@photos.dev", "code": fresh, "newPassword": "another123"])
        #expect(try bus.accounts.signIn(email: "demo@photos.dev", password: "another123", session: "s1").name == "Demo Photographer")
    }

    @Test func photosRoundTrip() throws {
        let feed = try bus.photos.feed(user: "ana@example.com")
        #expect(feed.count == 36)
        let base = feed[6].likes
        #expect(feed[6].id == "photo:7")
        #expect(try bus.photos.like(id: "photo:7", user: "ana@example.com").likes == base + 1)
        #expect(try bus.photos.like(id: "photo:7", user: "ana@example.com").likes == base + 1)
        _ = try bus.photos.like(id: "photo:2", user: "ana@example.com")
        #expect(try bus.photos.likes(user: "ana@example.com").map(\.id) == ["photo:7", "photo:2"])
        #expect(try bus.photos.photo(id: "photo:7", user: "ana@example.com").liked)
        #expect(try !bus.photos.unlike(id: "photo:7", user: "ana@example.com").liked)
        #expect(try bus.photos.feed(user: "ana@example.com").filter(\.liked).map(\.id) == ["photo:2"])
        #expect(throws: ServiceFailure.refused(.unknownPhoto)) { try bus.photos.photo(id: "photo:404", user: "ana@example.com") }
        #expect(transport.sent.map(\.method) == ["feed", "like", "like", "like", "likes", "photo", "unlike", "feed", "photo"])
        #expect(transport.sent.allSatisfy { $0.service == "svc.photos" })
    }

    @Test func mailRoundTrip() throws {
        try bus.mail.send(Mail(to: "bo@example.com", subject: "Hi", body: "Hello there"))
        #expect(try bus.mail.outbox(email: "BO@example.com") == [Mail(to: "bo@example.com", subject: "Hi", body: "Hello there")])
        #expect(try bus.mail.outbox(email: "nobody@example.com").isEmpty)
    }

    @Test func aMissingServiceIsUnavailable() {
        let services = PhotosServices.bus(transport: RecordingTransport([:]))
        do {
            _ = try services.photos.feed(user: "")
            Issue.record("expected a failure")
        } catch {
            guard case .unavailable(let reason) = error else { Issue.record("expected unavailable, got \(error)"); return }
            #expect(reason.contains("svc.photos"))
        }
    }

    @Test func aReplyOfTheWrongKindIsUnavailable() throws {
        var reply = Flowbus_V1_ServiceReply()
        reply.payload = try Photos_V1_Account().serializedData()
        reply.payloadKind = "photos.v1.Account"
        transport.override["photo"] = reply
        #expect(throws: ServiceFailure.unavailable(
            "svc.photos photo answered with photos.v1.Account instead of photos.v1.Photo; check that the services run the same version as this plugin")) {
            try bus.photos.photo(id: "photo:1", user: "")
        }
        transport.override["outbox"] = Flowbus_V1_ServiceReply()
        #expect(throws: ServiceFailure.self) { try bus.mail.outbox(email: "bo@example.com") }
    }

    @Test func anUnknownRefusalOrAnErrorIsUnavailable() throws {
        var refused = Flowbus_V1_ServiceReply()
        refused.refusal = "accountFrozen"
        transport.override["signIn"] = refused
        do {
            _ = try bus.accounts.signIn(email: "demo@photos.dev", password: "photos123", session: "s1")
            Issue.record("expected a failure")
        } catch {
            guard case .unavailable(let reason) = error else { Issue.record("expected unavailable, got \(error)"); return }
            #expect(reason.contains("\"accountFrozen\""))
        }
        transport.override = [:]
        do {
            _ = try bus.photos.like(id: "photo:1", user: "")
            Issue.record("expected a failure")
        } catch {
            guard case .unavailable(let reason) = error else { Issue.record("expected unavailable, got \(error)"); return }
            #expect(reason.contains("svc.photos like failed: svc.photos like needs the argument \"user\""))
        }
    }
}
