import CSodium

/// SHA-256 (FIPS 180-4) fed in pieces. The work is libsodium's, which libzmq already links for
/// CURVE, so hashing costs the build no library of its own.
///
/// A value: a copy carries the state hashed so far, so a common prefix (an HMAC's padded key)
/// can be hashed once and each copy finished with its own message.
public struct SHA256: Sendable {
    /// Bytes of a digest.
    public static let byteCount = 32
    /// Bytes of one block of the compression function (the length HMAC pads its key to).
    public static let blockByteCount = 64

    private var state = crypto_hash_sha256_state()

    public init() {
        Sodium.prepare()
        crypto_hash_sha256_init(&state)
    }

    /// Hashes `bytes` after what came before.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        crypto_hash_sha256_update(&state, base.assumingMemoryBound(to: UInt8.self), UInt64(bytes.count))
    }

    /// Hashes `bytes` after what came before.
    public mutating func update(_ bytes: some Collection<UInt8>) {
        let done: Void? = bytes.withContiguousStorageIfAvailable { update(UnsafeRawBufferPointer($0)) }
        if done == nil { Array(bytes).withUnsafeBytes { update($0) } }
    }

    /// The digest of everything hashed so far; the value itself is left as it was and can go on.
    public func finalize() -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: Self.byteCount) { digest, count in
            finalize(into: digest.baseAddress!)
            count = Self.byteCount
        }
    }

    /// The digest of everything hashed so far, written to the `byteCount` bytes at `digest`, with
    /// nothing allocated (a password hash finishes two digests a round, thousands of rounds); the
    /// value itself is left as it was and can go on.
    public func finalize(into digest: UnsafeMutablePointer<UInt8>) {
        var finishing = state
        crypto_hash_sha256_final(&finishing, digest)
    }

    /// The digest of `bytes`.
    public static func hash(_ bytes: some Collection<UInt8>) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(bytes)
        return hasher.finalize()
    }
}

/// HMAC-SHA256 (RFC 2104), libsodium's.
public enum HMACSHA256 {
    /// Bytes of a code.
    public static let byteCount = 32

    /// The code of `message` under `key` (a key of any length: one past 64 bytes is hashed first,
    /// as RFC 2104 says).
    public static func code(for message: some Collection<UInt8>, key: [UInt8]) -> [UInt8] {
        Sodium.prepare()
        var state = crypto_auth_hmacsha256_state()
        // An empty array may have no storage; the init wants a pointer even for no bytes.
        _ = (key.isEmpty ? [0] : key).withUnsafeBufferPointer { crypto_auth_hmacsha256_init(&state, $0.baseAddress!, key.count) }
        let message = Array(message)
        message.withUnsafeBufferPointer { bytes in
            if let base = bytes.baseAddress, !bytes.isEmpty {
                crypto_auth_hmacsha256_update(&state, base, UInt64(bytes.count))
            }
        }
        var code = [UInt8](repeating: 0, count: byteCount)
        crypto_auth_hmacsha256_final(&state, &code)
        return code
    }
}

/// libsodium wants `sodium_init` called once before its functions are used (it picks the
/// implementations the CPU supports). It is safe to call from any thread, any number of times;
/// the first call made here is kept.
enum Sodium {
    private static let initialized: Bool = sodium_init() >= 0

    static func prepare() { _ = initialized }
}
