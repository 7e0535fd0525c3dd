import FlowKit
import FlowProtocol
import Foundation
import Logging
import PhotosApp
import SwiftProtobuf
import Testing

/// The handlers as the bus sees them: a `ServiceCall` in, a `ServiceReply` out, no adapter between.
@Suite struct ServiceHandlerTests {
    let handlers: [String: ServiceHandler]

    init() throws {
        handlers = try makeServices().handlers
    }

    func call(_ service: String, _ method: String, _ args: [String: String] = [:]) throws -> Flowbus_V1_ServiceReply {
        // Bound first: `try #require(handler)(call)` in one expression crashes the 6.3 type checker.
        let handler = try #require(handlers[service])
        return handler(Flowbus_V1_ServiceCall(method, args))
    }

    func decode<M: SwiftProtobuf.Message>(_ reply: Flowbus_V1_ServiceReply, as type: M.Type) throws -> M {
        #expect(!reply.hasError, "\(reply.error.message)")
        #expect(reply.refusal.isEmpty)
        #expect(reply.payloadKind == M.protoMessageName)
        return try M(serializedBytes: reply.payload)
    }

    @Test func everyServiceNameIsServed() {
        #expect(PhotosServiceName.all == ["svc.accounts", "svc.photos", "svc.mail"])
        #expect(Set(handlers.keys) == Set(PhotosServiceName.all))
    }

    @Test func accountsRoundTrip() throws {
        let created = try decode(call("svc.accounts", "register", ["name": "Ana", "email": "ana@example.com", "password": "secret123"]), as: Photos_V1_Account.self)
        #expect(created.email == "ana@example.com")
        #expect(created.name == "Ana")
        #expect(Photos_V1_Account.protoMessageName == "photos.v1.Account")
        #expect(try call("svc.accounts", "register", ["name": "Ana", "email": "ANA@example.com", "password": "secret123"]).refusal == "emailTaken")
        #expect(try call("svc.accounts", "signIn", ["email": "ana@example.com", "password": "nope-nope", "session": "s1"]).refusal == "invalidCredentials")
        let signedIn = try decode(call("svc.accounts", "signIn", ["email": "ana@example.com", "password": "secret123", "session": "s1"]), as: Photos_V1_Account.self)
        #expect(signedIn == created)
        #expect(try decode(call("svc.accounts", "account", ["session": "s1"]), as: Photos_V1_Account.self) == created)
        let out = try call("svc.accounts", "signOut", ["session": "s1"])
        #expect(!out.hasError && out.refusal.isEmpty && out.payload.isEmpty && out.result.isEmpty)
        #expect(try call("svc.accounts", "account", ["session": "s1"]).refusal == "notSignedIn")
    }

    @Test func registerWithASessionSignsItIn() throws {
        _ = try decode(call("svc.accounts", "register", ["name": "Ana", "email": "ana@example.com", "password": "secret123", "session": "s9"]), as: Photos_V1_Account.self)
        #expect(try decode(call("svc.accounts", "account", ["session": "s9"]), as: Photos_V1_Account.self).email == "ana@example.com")
    }

    @Test func passwordResetRoundTrip() throws {
        let requested = try call("svc.accounts", "requestPasswordReset", ["email": "demo@photos.dev"])
        #expect(!requested.hasError && requested.refusal.isEmpty)
        let outbox = try call("svc.mail", "outbox", ["email": "demo@photos.dev"]).result
        #expect(outbox["count"] == "1")
        let sent = try #require(code(in: Mail(to: "", subject: "", body: outbox["mail.0.body"] ?? "")))
        // The code by itself too, newest first, for a script to save (`save: {code: code}`).
        #expect(outbox["mail.0.code"] == sent)
        #expect(outbox["code"] == sent)
        #expect(try call("svc.accounts", "resetPassword", ["email": "demo@photos.dev", "code": otherCode(than: sent), "newPassword": "another123"]).refusal == "wrongCode")
        let reset = try call("svc.accounts", "resetPassword", ["email": "demo@photos.dev", "code": sent, "newPassword": "another123"])
        #expect(!reset.hasError && reset.refusal.isEmpty)
        #expect(try call("svc.accounts", "signIn", ["email": "demo@photos.dev", "password": "another123", "session": "s1"]).payloadKind == "photos.v1.Account")
        #expect(try call("svc.accounts", "requestPasswordReset", ["email": "nobody@example.com"]).refusal.isEmpty)
    }

    @Test func photosRoundTrip() throws {
        let feed = try decode(call("svc.photos", "feed", ["user": "ana@example.com"]), as: Photos_V1_PhotoList.self)
        #expect(feed.photos.count == 36)
        #expect(Photos_V1_PhotoList.protoMessageName == "photos.v1.PhotoList")
        #expect(try decode(call("svc.photos", "feed"), as: Photos_V1_PhotoList.self).photos.count == 36)
        let photo = try decode(call("svc.photos", "photo", ["id": "photo:7"]), as: Photos_V1_Photo.self)
        #expect(photo.id == "photo:7")
        #expect(!photo.author.name.isEmpty)
        let liked = try decode(call("svc.photos", "like", ["id": "photo:7", "user": "ana@example.com"]), as: Photos_V1_Photo.self)
        #expect(liked.liked && liked.likes == photo.likes + 1)
        let twice = try decode(call("svc.photos", "like", ["id": "photo:7", "user": "ana@example.com"]), as: Photos_V1_Photo.self)
        #expect(twice.likes == photo.likes + 1)
        let likes = try decode(call("svc.photos", "likes", ["user": "ana@example.com"]), as: Photos_V1_PhotoList.self)
        #expect(likes.photos.map(\.id) == ["photo:7"])
        let unliked = try decode(call("svc.photos", "unlike", ["id": "photo:7", "user": "ana@example.com"]), as: Photos_V1_Photo.self)
        #expect(!unliked.liked && unliked.likes == photo.likes)
        #expect(try call("svc.photos", "photo", ["id": "photo:0", "user": "ana@example.com"]).refusal == "unknownPhoto")
        #expect(try call("svc.photos", "like", ["id": "nope", "user": "ana@example.com"]).refusal == "unknownPhoto")
    }

    @Test func mailRoundTripKeepsTheMoviesOutboxContract() throws {
        let sent = try call("svc.mail", "send", ["to": "Bo@Example.com", "subject": "Hi", "body": "Hello there"])
        #expect(!sent.hasError && sent.refusal.isEmpty)
        _ = try call("svc.mail", "send", ["to": "bo@example.com", "subject": "Again"])
        let outbox = try call("svc.mail", "outbox", ["email": "bo@example.com"])
        #expect(outbox.payload.isEmpty && outbox.payloadKind.isEmpty)
        #expect(outbox.result == [
            "count": "2",
            "mail.0.to": "Bo@Example.com", "mail.0.subject": "Hi", "mail.0.body": "Hello there",
            "mail.1.to": "bo@example.com", "mail.1.subject": "Again", "mail.1.body": "",
        ])
        #expect(try call("svc.mail", "outbox", ["email": "nobody@example.com"]).result == ["count": "0"])
    }

    @Test(arguments: [("svc.accounts", "signIn"), ("svc.photos", "feed"), ("svc.mail", "outbox")])
    func anUnknownMethodIsAnErrorThatNamesTheMethods(service: String, known: String) throws {
        let reply = try call(service, "deleteEverything")
        #expect(reply.error.code == .invalidField)
        #expect(reply.error.message == "\(service) cannot answer: it has no method \"deleteEverything\"")
        #expect(reply.error.hint.hasPrefix("call one of: "))
        #expect(reply.error.hint.contains(known))
        #expect(reply.refusal.isEmpty && reply.payload.isEmpty)
        #expect(try call(service, "").error.message == "\(service) cannot answer: no method was named")
    }

    @Test(arguments: [
        ("svc.accounts", "register", ["name": "Ana", "password": "secret123"], "email"),
        ("svc.accounts", "signIn", ["email": "demo@photos.dev", "password": "photos123"], "session"),
        ("svc.accounts", "account", [:], "session"),
        ("svc.accounts", "signOut", ["session": ""], "session"),
        ("svc.accounts", "requestPasswordReset", [:], "email"),
        ("svc.accounts", "resetPassword", ["email": "demo@photos.dev", "code": "123456"], "newPassword"),
        ("svc.photos", "photo", ["user": "ana@example.com"], "id"),
        ("svc.photos", "like", ["id": "photo:1"], "user"),
        ("svc.photos", "unlike", ["user": "ana@example.com"], "id"),
        ("svc.photos", "likes", [:], "user"),
        ("svc.mail", "send", ["subject": "Hi"], "to"),
        ("svc.mail", "outbox", [:], "email"),
    ])
    func aMissingArgumentIsAnErrorThatSaysHowToCall(service: String, method: String, args: [String: String], missing: String) throws {
        let reply = try call(service, method, args)
        #expect(reply.error.code == .invalidField)
        #expect(reply.error.message == "\(service) \(method) needs the argument \"\(missing)\", and it is missing or empty")
        #expect(reply.error.hint.hasPrefix("call it as: flowbus call \(service) \(method) "))
        #expect(reply.error.hint.contains("\(missing)=…"))
        #expect(reply.refusal.isEmpty && reply.payload.isEmpty)
    }

    @Test func aBadValueIsARefusalNotAnError() throws {
        #expect(try call("svc.accounts", "register", ["name": "Ana", "email": "not-an-email", "password": "secret123"]).refusal == "invalidEmail")
        #expect(try call("svc.accounts", "register", ["name": "Ana", "email": "ana@example.com", "password": "short"]).refusal == "passwordTooShort")
        #expect(try call("svc.accounts", "register", ["name": " ", "email": "ana@example.com", "password": "secret123"]).refusal == "nameMissing")
    }

    @Test func loggedHandlersAnswerLikeThePlainOnes() throws {
        let logged = try makeServices().handlers(logger: Logger(label: "flowbus.test"))
        #expect(Set(logged.keys) == Set(PhotosServiceName.all))
        let accounts = try #require(logged["svc.accounts"])
        #expect(accounts(Flowbus_V1_ServiceCall("signIn", ["email": "x@y.z", "password": "nope", "session": "s1"])).refusal == "invalidCredentials")
        let photos = try #require(logged["svc.photos"])
        #expect(photos(Flowbus_V1_ServiceCall("nope")).error.code == .invalidField)
        let mail = try #require(logged["svc.mail"])
        #expect(mail(Flowbus_V1_ServiceCall("outbox", ["email": "x@y.z"])).result["count"] == "0")
    }
}
