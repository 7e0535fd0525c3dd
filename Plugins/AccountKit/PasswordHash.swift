import Digests
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
    ///
    /// Each round is one HMAC (RFC 2104): SHA-256 over the key padded with 0x36 then the
    /// message, and over the key padded with 0x5c then that digest. The two padded keys are the
    /// same in every round, so the hash states after them are made once and copied: a round costs
    /// two SHA-256 blocks instead of four, and no key set-up (a sign-in hashes 4,096 rounds).
    public static func derive(_ password: String, salt: [UInt8], iterations: Int) -> [UInt8] {
        var key = Array(password.utf8)
        if key.count > SHA256.blockByteCount { key = SHA256.hash(key) }
        key += [UInt8](repeating: 0, count: SHA256.blockByteCount - key.count)
        var inner = SHA256()
        inner.update(key.map { $0 ^ 0x36 })
        var outer = SHA256()
        outer.update(key.map { $0 ^ 0x5c })
        func hmac(_ message: [UInt8]) -> [UInt8] {
            var innerHash = inner
            innerHash.update(message)
            var outerHash = outer
            outerHash.update(innerHash.finalize())
            return outerHash.finalize()
        }
        var block = hmac(salt + [0, 0, 0, 1])
        var result = block
        for _ in 1..<max(iterations, 1) {
            block = hmac(block)
            for index in result.indices { result[index] ^= block[index] }
        }
        return result
    }
}
