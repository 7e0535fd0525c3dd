import Crypto
import Foundation

/// What a capability lets its holder do with one session (`Protocols/README.md`, "Who may do what").
public enum SessionRight: String, Sendable, CaseIterable {
    /// Send intents, attach, touch and close: what `openSession` gives the client that opened it.
    case drive
    /// Read the session's keys and nothing else: for observers the driver chose to let in.
    case watch
    /// Everything, on every session: held by the host's own plugins and its user's local tools.
    case plugin

    /// Whether a holder of this right may also do what `other` allows.
    public func covers(_ other: SessionRight) -> Bool {
        switch (self, other) {
        case (.plugin, _), (.drive, .drive), (.drive, .watch), (.watch, .watch): true
        default: false
        }
    }
}

/// The host's secret for session capabilities: a token is `<right>.<mac>`, the mac an
/// HMAC-SHA256 of the right and the session id under this key, cut to 128 bits. Whoever holds
/// the key (the host, its plugins, its user's tools reading the run directory) can make and check
/// tokens; a client can only present the ones it was given. Tokens name no expiry: they die with
/// the key, which a host keeps in its run directory for as long as the directory lives.
public struct CapabilityKey: Sendable, Equatable {
    /// The key's 32 bytes (SymmetricKey is not Sendable; one is made per use, which is cheap).
    let bytes: [UInt8]
    /// Bytes of the mac kept in a token.
    static let macBytes = 16

    /// A fresh random key.
    public static func generate() -> CapabilityKey {
        CapabilityKey(bytes: SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) })
    }

    init(bytes: [UInt8]) { self.bytes = bytes }

    /// The key from its 64 hex digits (how the host writes it and passes it to plugins), or nil.
    public init?(hex: String) {
        let text = hex.trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.count == 64 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            guard let byte = UInt8(text[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        self.bytes = bytes
    }

    /// 64 lowercase hex digits.
    public var hex: String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }

    /// The token that grants `right` on `session`.
    public func token(_ right: SessionRight, session: String) -> String {
        right.rawValue + "." + Self.base64URL(mac(right, session: session))
    }

    /// The right `token` grants on `session`, or nil when it grants none (malformed, another
    /// session's, another key's). The comparison takes the same time however much matches.
    public func right(of token: String, session: String) -> SessionRight? {
        guard let dot = token.firstIndex(of: "."), let right = SessionRight(rawValue: String(token[..<dot])),
              let presented = Self.decodeBase64URL(token[token.index(after: dot)...]), presented.count == Self.macBytes
        else { return nil }
        let expected = mac(right, session: session)
        var difference: UInt8 = 0
        for (a, b) in zip(expected, presented) { difference |= a ^ b }
        return difference == 0 ? right : nil
    }

    /// Whether `token` grants at least `needed` on `session`.
    public func allows(_ token: String, _ needed: SessionRight, session: String) -> Bool {
        right(of: token, session: session)?.covers(needed) ?? false
    }

    func mac(_ right: SessionRight, session: String) -> [UInt8] {
        var message = Array("flowbus-capability/1".utf8)
        message.append(0)
        message += Array(right.rawValue.utf8)
        message.append(0)
        message += Array(session.utf8)
        let code = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: bytes))
        return Array(Array(code).prefix(Self.macBytes))
    }

    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    static func decodeBase64URL(_ text: Substring) -> [UInt8]? {
        guard text.count <= 64 else { return nil }
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while standard.count % 4 != 0 { standard += "=" }
        return Data(base64Encoded: standard).map(Array.init)
    }

}
