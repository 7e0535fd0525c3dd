import AccountKit
import AppStore
import Foundation
import PhotosApp
import Testing

/// `PhotosServices.durable` on a file: a second opening (a restarted photos-services) holds
/// everything the first one answered for.
@Suite struct DurableServicesTests {
    let clock = TestClock()
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("photos-\(UUID().uuidString)")
    var path: String { folder.appendingPathComponent("photos.sqlite").path }

    func open() throws -> PhotosServices {
        try PhotosServices.durable(path: path, catalog: try PhotoCatalog.bundled(), codeLifetime: 600, clock: clock.now, hashIterations: 16)
    }

    func lastCode(_ services: PhotosServices, _ email: String) throws -> String {
        try #require(code(in: try services.mail.outbox(email: email).last))
    }

    @Test func reopeningYieldsTheAccountsSessionsLikesAndMailCommitted() throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let first = try open()
        let ana = try first.accounts.register(name: "Ana", email: "Ana@Example.com", password: "secret123", session: "s1")
        _ = try first.accounts.signIn(email: "ana@example.com", password: "secret123", session: "s2")
        _ = try first.accounts.signIn(email: "demo@photos.dev", password: "photos123", session: "s3")
        try first.accounts.signOut(session: "s2")
        _ = try first.photos.like(id: "photo:3", user: "ana@example.com")
        _ = try first.photos.like(id: "photo:5", user: "ana@example.com")
        _ = try first.photos.like(id: "photo:1", user: "ana@example.com")
        _ = try first.photos.unlike(id: "photo:5", user: "ana@example.com")
        _ = try first.photos.like(id: "photo:3", user: "demo@photos.dev")
        try first.accounts.requestPasswordReset(email: "demo@photos.dev")
        let feedBefore = try first.photos.feed(user: "ana@example.com")

        // A second process on the same file.
        let second = try open()
        #expect(try second.accounts.account(forSession: "s1") == ana)
        #expect(throws: ServiceFailure.refused(.notSignedIn)) { try second.accounts.account(forSession: "s2") }
        #expect(try second.accounts.signIn(email: "ana@example.com", password: "secret123", session: "s4") == ana)
        #expect(throws: ServiceFailure.refused(.emailTaken)) {
            try second.accounts.register(name: "Ana again", email: "ana@example.com", password: "secret123", session: "")
        }
        #expect(try second.photos.likes(user: "ana@example.com").map(\.id) == ["photo:3", "photo:1"])
        #expect(try second.photos.feed(user: "ana@example.com") == feedBefore, "likes counts or liked flags changed on reopening")
        #expect(try second.mail.outbox(email: "demo@photos.dev").count == 1)

        // The code mailed before the restart resets the password, and signs the demo's sessions out.
        try second.accounts.resetPassword(email: "demo@photos.dev", code: try lastCode(second, "demo@photos.dev"), newPassword: "another123")

        let third = try open()
        #expect(throws: ServiceFailure.refused(.notSignedIn)) { try third.accounts.account(forSession: "s3") }
        #expect(throws: ServiceFailure.refused(.invalidCredentials)) {
            try third.accounts.signIn(email: "demo@photos.dev", password: "photos123", session: "s5")
        }
        #expect(try third.accounts.signIn(email: "demo@photos.dev", password: "another123", session: "s5").name == "Demo Photographer")
        #expect(try third.accounts.account(forSession: "s4") == ana)
    }

    @Test func aResetCodeKeepsItsWrongTriesAcrossARestart() throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        let first = try open()
        _ = try first.accounts.register(name: "Ana", email: "ana@example.com", password: "secret123", session: "")
        try first.accounts.requestPasswordReset(email: "ana@example.com")
        try first.accounts.requestPasswordReset(email: "demo@photos.dev")
        let code = try lastCode(first, "demo@photos.dev")
        for _ in 1..<InMemoryAccountService.maximumWrongCodes {
            #expect(throws: ServiceFailure.refused(.wrongCode)) {
                try first.accounts.resetPassword(email: "demo@photos.dev", code: otherCode(than: code), newPassword: "another123")
            }
        }
        // Both counts outlive the process: the code's own, and the guess limiter's.
        let second = try open()
        // Ana's untried code is still good; the demo's fifth wrong try locks the account…
        try second.accounts.resetPassword(email: "ana@example.com", code: try lastCode(second, "ana@example.com"), newPassword: "another123")
        #expect(throws: ServiceFailure.refused(.wrongCode)) {
            try second.accounts.resetPassword(email: "demo@photos.dev", code: otherCode(than: code), newPassword: "another123")
        }
        let third = try open()
        #expect(throws: ServiceFailure.refused(.tooManyAttempts)) {
            try third.accounts.resetPassword(email: "demo@photos.dev", code: code, newPassword: "another123")
        }
        // …and once the lock is over, the code itself is void.
        clock.advance(by: AttemptLimiter.Policy().lockout + 1)
        #expect(throws: ServiceFailure.refused(.wrongCode)) {
            try third.accounts.resetPassword(email: "demo@photos.dev", code: code, newPassword: "another123")
        }
        #expect(try open().accounts.signIn(email: "demo@photos.dev", password: "photos123", session: "s1").email == "demo@photos.dev")
    }

    @Test func aDamagedRecordIsReportedNotDropped() throws {
        defer { try? FileManager.default.removeItem(at: folder) }
        _ = try open()
        try RecordStore(path: path).put("photo-likes", "ana@example.com", Data("not json".utf8))
        do {
            _ = try open()
            Issue.record("a damaged likes record was loaded without a word")
        } catch {
            #expect("\(error)".contains("photo-likes record ana@example.com does not decode"), "\(error)")
            #expect("\(error)".contains("move the file away"), "\(error)")
        }
    }
}
