import CZeroMQ

/// A 32-byte CURVE key.
public struct CurveKey: Hashable, Sendable, CustomStringConvertible {
    public let bytes: [UInt8]

    public init(bytes: [UInt8]) throws(CurveKeyError) {
        guard bytes.count == 32 else { throw .wrongLength(bytes.count) }
        self.bytes = bytes
    }

    /// Parses the 40-character Z85 text form `flowbus keys` prints.
    public init(z85 text: String) throws(CurveKeyError) {
        let trimmed = text.trimmingWhitespace()
        guard trimmed.utf8.count == 40 else { throw .notZ85(trimmed) }
        var decoded = [UInt8](repeating: 0, count: 32)
        let ok = decoded.withUnsafeMutableBufferPointer { zmq_z85_decode($0.baseAddress, trimmed) != nil }
        guard ok else { throw .notZ85(trimmed) }
        bytes = decoded
    }

    /// The 40-character Z85 text form.
    public var z85: String {
        var text = [CChar](repeating: 0, count: 41)
        _ = bytes.withUnsafeBufferPointer { zmq_z85_encode(&text, $0.baseAddress, 32) }
        return String(decoding: text.prefix(40).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    public var description: String { z85 }
}

public enum CurveKeyError: Error, CustomStringConvertible, Equatable {
    case wrongLength(Int)
    case notZ85(String)
    case unsupported

    public var description: String {
        switch self {
        case .wrongLength(let count):
            "a CURVE key has 32 bytes, this one has \(count); use a key made by `flowbus keys`"
        case .notZ85(let text):
            "'\(text)' is not a 40-character Z85 CURVE key; use a key made by `flowbus keys`"
        case .unsupported:
            "this libzmq was built without CURVE; install Debian's libzmq3-dev (built with libsodium)"
        }
    }
}

/// A CURVE key pair.
public struct CurveKeyPair: Hashable, Sendable {
    public let publicKey: CurveKey
    public let secretKey: CurveKey

    public init(publicKey: CurveKey, secretKey: CurveKey) {
        self.publicKey = publicKey
        self.secretKey = secretKey
    }

    /// A new random key pair.
    public static func generate() throws(CurveKeyError) -> CurveKeyPair {
        var publicText = [CChar](repeating: 0, count: 41)
        var secretText = [CChar](repeating: 0, count: 41)
        guard zmq_curve_keypair(&publicText, &secretText) == 0 else { throw .unsupported }
        return CurveKeyPair(
            publicKey: try CurveKey(z85: String(decoding: publicText.prefix(40).map { UInt8(bitPattern: $0) }, as: UTF8.self)),
            secretKey: try CurveKey(z85: String(decoding: secretText.prefix(40).map { UInt8(bitPattern: $0) }, as: UTF8.self))
        )
    }

    /// The key pair whose secret key is given (the public key is derived from it).
    public init(secretKey: CurveKey) throws(CurveKeyError) {
        var publicText = [CChar](repeating: 0, count: 41)
        guard zmq_curve_public(&publicText, secretKey.z85) == 0 else { throw .unsupported }
        self.publicKey = try CurveKey(z85: String(decoding: publicText.prefix(40).map { UInt8(bitPattern: $0) }, as: UTF8.self))
        self.secretKey = secretKey
    }
}

extension String {
    func trimmingWhitespace() -> String {
        let scalars = unicodeScalars
        guard let start = scalars.firstIndex(where: { !$0.properties.isWhitespace }) else { return "" }
        let end = scalars.lastIndex(where: { !$0.properties.isWhitespace })!
        return String(scalars[start...end])
    }
}
