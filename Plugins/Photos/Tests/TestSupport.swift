import Foundation
import PhotosApp
import Synchronization

/// A wall clock the test moves by hand.
final class TestClock: Sendable {
    let current = Mutex(Date(timeIntervalSince1970: 1_800_000_000))

    var now: PhotosClock { { self.current.withLock { $0 } } }

    func advance(by seconds: TimeInterval) {
        current.withLock { $0 += seconds }
    }
}

/// The 6-digit code in a reset mail.
func code(in mail: Mail?) -> String? {
    guard let body = mail?.body, let range = body.range(of: #"\b[0-9]{6}\b"#, options: .regularExpression) else { return nil }
    return String(body[range])
}

/// A 6-digit code that is not `code`.
func otherCode(than code: String) -> String {
    code == "000000" ? "111111" : "000000"
}

/// The in-memory services over the bundled catalog, with cheap password hashing for speed.
func makeServices(clock: TestClock = TestClock(), codeLifetime: TimeInterval = 900) throws -> PhotosServices {
    PhotosServices.inMemory(catalog: try PhotoCatalog.bundled(), codeLifetime: codeLifetime, clock: clock.now, hashIterations: 16)
}
