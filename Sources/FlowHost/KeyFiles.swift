import Foundation
import ZeroMQ

/// CURVE keys on disk: `NAME.key` holds the secret key, `NAME.pub` the public key, each one
/// z85 line; an allow-list file holds one public key a line; a word starting with `#` begins a comment.
public enum KeyFiles {
    public static func write(_ pair: CurveKeyPair, basePath: String) throws {
        let secret = basePath + ".key"
        let publicPath = basePath + ".pub"
        try Data((pair.secretKey.z85 + "\n").utf8).write(to: URL(fileURLWithPath: secret))
        chmod(secret, 0o600)
        try Data((pair.publicKey.z85 + "\n").utf8).write(to: URL(fileURLWithPath: publicPath))
    }

    public static func readSecret(path: String) throws -> CurveKeyPair {
        let text = try readText(path)
        do {
            return try CurveKeyPair(secretKey: CurveKey(z85: text))
        } catch {
            throw HostError.unreadableKeyFile(path: path, reason: error.description)
        }
    }

    public static func readPublic(path: String) throws -> CurveKey {
        let text = try readText(path)
        do {
            return try CurveKey(z85: text)
        } catch {
            throw HostError.unreadableKeyFile(path: path, reason: error.description)
        }
    }

    public static func readAllowList(path: String) throws -> Set<CurveKey> {
        var keys = Set<CurveKey>()
        for (number, line) in try readText(path).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            // `#` is a Z85 digit, so a comment is a word that starts with it, not any `#`.
            guard let first = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" }).first,
                  !first.hasPrefix("#") else { continue }
            let trimmed = String(first)
            do {
                keys.insert(try CurveKey(z85: trimmed))
            } catch {
                throw HostError.unreadableKeyFile(path: path, reason: "line \(number + 1): \(error.description)")
            }
        }
        return keys
    }

    private static func readText(_ path: String) throws -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw HostError.unreadableKeyFile(path: path, reason: "the file does not exist or cannot be read")
        }
        return String(decoding: data, as: UTF8.self)
    }
}
