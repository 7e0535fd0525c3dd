import Foundation
import MoviesApp
import Synchronization

/// A wall clock the test moves by hand.
final class TestClock: Sendable {
    let current = Mutex(Date(timeIntervalSince1970: 1_800_000_000))

    var now: AppClock { { self.current.withLock { $0 } } }

    func advance(by seconds: TimeInterval) {
        current.withLock { $0 += seconds }
    }
}

/// The 6-digit code in a verification mail.
func token(in mail: Mail?) -> String? {
    guard let body = mail?.body, let range = body.range(of: #"\b[0-9]{6}\b"#, options: .regularExpression) else { return nil }
    return String(body[range])
}

/// The in-memory services over the bundled catalog, with cheap password hashing for speed.
func makeInMemoryServices(clock: TestClock = TestClock(), tokenLifetime: TimeInterval = 600) throws -> AppServices {
    AppServices.inMemory(catalog: try Catalog.bundled(), tokenLifetime: tokenLifetime, clock: clock.now, hashIterations: 16)
}

func registration(_ email: String = "ana@example.com", password: String = "secret123") -> Registration {
    Registration(name: "Ana", nickname: "ana", email: email, password: password, genres: ["drama"])
}
