import AccountKit
import AppStore
import FlowbusTesting
import Foundation
import PhotosApp
import Testing

/// Two `PhotosServices` on one PostgreSQL schema, as two photos-services replicas: each call
/// (run as the runtime runs it, inside the store's `answer`) sees what the other committed —
/// accounts, sessions, likes and the counts derived from them, mail, reset codes.
@Suite struct ReplicatedServicesTests {
    let clock = TestClock()
    let schema = "photos_" + UUID().uuidString.prefix(8).lowercased()

    func replica() throws -> PhotosServices {
        let records = try RecordStore(postgres: try PostgresServer.shared().address(), schema: schema)
        return try PhotosServices.durable(records: records, catalog: try PhotoCatalog.bundled(), codeLifetime: 600, clock: clock.now, hashIterations: 16)
    }

    /// One call on `services`, as ServiceWorkerRuntime makes it.
    func call<T>(_ services: PhotosServices, _ body: () throws -> T) throws -> T {
        var result: Result<T, any Error>?
        _ = try #require(services.records).answer("") {
            result = Result { try body() }
            return []
        }
        return try #require(result).get()
    }

    @Test func eachReplicaSeesTheOthersAccountsLikesAndCodes() throws {
        let first = try replica()
        let second = try replica()
        let ana = try call(first) { try first.accounts.register(name: "Ana", email: "ana@example.com", password: "secret123", session: "s1") }
        #expect(try call(second) { try second.accounts.account(forSession: "s1") } == ana)
        #expect(try call(second) { try second.accounts.signIn(email: "ana@example.com", password: "secret123", session: "s2") } == ana)

        let before = try call(first) { try first.photos.photo(id: "photo:3", user: "ana@example.com") }.likes
        _ = try call(first) { try first.photos.like(id: "photo:3", user: "ana@example.com") }
        let seen = try call(second) { try second.photos.photo(id: "photo:3", user: "ana@example.com") }
        #expect(seen.liked && seen.likes == before + 1)
        _ = try call(second) { try second.photos.unlike(id: "photo:3", user: "ana@example.com") }
        let back = try call(first) { try first.photos.photo(id: "photo:3", user: "ana@example.com") }
        #expect(!back.liked && back.likes == before, "the count follows the other replica's unlike")

        // A reset code mailed by one replica is accepted by the other, and signs out the sessions both know.
        try call(first) { () throws -> Void in try first.accounts.requestPasswordReset(email: "ana@example.com") }
        let resetCode = try #require(try call(second) { () throws -> String? in code(in: try second.mail.outbox(email: "ana@example.com").last) })
        try call(second) { () throws -> Void in try second.accounts.resetPassword(email: "ana@example.com", code: resetCode, newPassword: "another123") }
        #expect(throws: ServiceFailure.refused(.notSignedIn)) { try call(first) { try first.accounts.account(forSession: "s2") } }
        #expect(try call(first) { try first.accounts.signIn(email: "ana@example.com", password: "another123", session: "s3") } == ana)
    }

    /// Wrong passwords spread over the replicas count together: the account locks after five in
    /// all, not five on each.
    @Test func guessesAreCountedOnceAcrossReplicas() throws {
        let replicas = try [replica(), replica()]
        let limit = AttemptLimiter.Policy().maxFailures
        for attempt in 0..<limit {
            let services = replicas[attempt % 2]
            #expect(throws: ServiceFailure.refused(.invalidCredentials)) {
                try call(services) { try services.accounts.signIn(email: "demo@photos.dev", password: "wrong\(attempt)", session: "g\(attempt)") }
            }
        }
        for services in replicas {
            #expect(throws: ServiceFailure.refused(.tooManyAttempts)) {
                try call(services) { try services.accounts.signIn(email: "demo@photos.dev", password: "photos123", session: "g-right") }
            }
        }
    }
}
