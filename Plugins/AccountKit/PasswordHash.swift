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
    /// two SHA-256 blocks instead of four, and no key set-up (a sign-in hashes 4,096 rounds). The
    /// rounds work in one scratch buffer (the block, the inner digest, the sum), so they allocate
    /// nothing: two arrays a round were some 40 % of a sign-in's hashing.
    public static func derive(_ password: String, salt: [UInt8], iterations: Int) -> [UInt8] {
        var key = Array(password.utf8)
        if key.count > SHA256.blockByteCount { key = SHA256.hash(key) }
        key += [UInt8](repeating: 0, count: SHA256.blockByteCount - key.count)
        let inner = padded(key, with: 0x36)
        let outer = padded(key, with: 0x5c)
        let size = SHA256.byteCount
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 3 * size) { scratch in
            let block = scratch.baseAddress!, innerDigest = block + size, sum = block + 2 * size
            // block = HMAC(message); the message may be the block itself: the inner hash has
            // taken it in before the outer digest overwrites it.
            func hmac(_ message: UnsafeRawBufferPointer) {
                var innerHash = inner
                innerHash.update(message)
                innerHash.finalize(into: innerDigest)
                var outerHash = outer
                outerHash.update(UnsafeRawBufferPointer(start: innerDigest, count: size))
                outerHash.finalize(into: block)
            }
            (salt + [0, 0, 0, 1]).withUnsafeBytes { hmac($0) }
            sum.update(from: block, count: size)
            for _ in 1..<max(iterations, 1) {
                hmac(UnsafeRawBufferPointer(start: block, count: size))
                for index in 0..<size { sum[index] ^= block[index] }
            }
            return Array(UnsafeBufferPointer(start: sum, count: size))
        }
    }

    /// A SHA-256 state that has taken in `key` (one block) with every byte XORed with `pad`.
    private static func padded(_ key: [UInt8], with pad: UInt8) -> SHA256 {
        var hash = SHA256()
        hash.update(key.map { $0 ^ pad })
        return hash
    }
}
