import Crypto
import Foundation

/// A stored password: PBKDF2-HMAC-SHA256 (one 32-byte block) with a per-user random salt.
/// The password itself is never kept.
public struct PasswordHash: Sendable, Codable, Equatable {
    public let salt: [UInt8]
    public let iterations: Int
    public let derived: [UInt8]

    public init(password: String, iterations: Int) {
        var generator = SystemRandomNumberGenerator()
        let salt = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        self.init(password: password, salt: salt, iterations: iterations)
    }

    public init(password: String, salt: [UInt8], iterations: Int) {
        self.salt = salt
        self.iterations = iterations
        self.derived = Self.derive(password, salt: salt, iterations: iterations)
    }

    public func matches(_ password: String) -> Bool {
        let candidate = Self.derive(password, salt: salt, iterations: iterations)
        // Compare every byte so the time taken does not tell how much matched.
        return zip(candidate, derived).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0 && candidate.count == derived.count
    }

    /// RFC 8018 PBKDF2, first block only (32 bytes are all a SHA-256 hash needs).
    public static func derive(_ password: String, salt: [UInt8], iterations: Int) -> [UInt8] {
        let key = SymmetricKey(data: Array(password.utf8))
        var block = Array(HMAC<SHA256>.authenticationCode(for: salt + [0, 0, 0, 1], using: key))
        var result = block
        for _ in 1..<max(iterations, 1) {
            block = Array(HMAC<SHA256>.authenticationCode(for: block, using: key))
            for index in result.indices { result[index] ^= block[index] }
        }
        return result
    }
}
