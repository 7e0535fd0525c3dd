import Digests
import Foundation
import Synchronization

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
    /// The key's 32 bytes.
    let bytes: [UInt8]
    /// Bytes of the mac kept in a token.
    static let macBytes = 16
    /// The macs this key computed lately, shared by its copies.
    let macs = MacCache()

    /// A fresh random key.
    public static func generate() -> CapabilityKey {
        // The system's generator: getrandom(2) on Linux, arc4random on Apple's systems.
        var generator = SystemRandomNumberGenerator()
        return CapabilityKey(bytes: (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    init(bytes: [UInt8]) { self.bytes = bytes }

    public static func == (lhs: CapabilityKey, rhs: CapabilityKey) -> Bool { lhs.bytes == rhs.bytes }

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
    /// Plugins sign every call they make for a session this way, so it uses the kept mac too.
    public func token(_ right: SessionRight, session: String) -> String {
        right.rawValue + "." + expectedMac(right, session: session).base64URL
    }

    /// The right `token` grants on `session`, or nil when it grants none (malformed, another
    /// session's, another key's). The comparison takes the same time however much matches.
    ///
    /// Every request and every subscription is checked this way, so the expected mac of a
    /// (session, right) is computed once and kept (`MacCache`): a check is then a lookup by
    /// session, not an HMAC-SHA256. What is kept is the expected mac, never a verdict on a
    /// token, so the presented mac is still compared in full, in constant time.
    public func right(of token: String, session: String) -> SessionRight? {
        var token = token
        token.makeContiguousUTF8()
        return token.utf8.withContiguousStorageIfAvailable { bytes -> SessionRight? in
            guard let dot = bytes.firstIndex(of: UInt8(ascii: ".")),
                  let right = SessionRight(rawValue: String(decoding: bytes[..<dot], as: UTF8.self)),
                  let presented = MacCache.Mac(base64URL: bytes[(dot + 1)...])
            else { return nil }
            return expectedMac(right, session: session).matches(presented) ? right : nil
        } ?? nil
    }

    /// Whether `token` grants at least `needed` on `session`.
    public func allows(_ token: String, _ needed: SessionRight, session: String) -> Bool {
        right(of: token, session: session)?.covers(needed) ?? false
    }

    /// The mac of (`right`, `session`), from `macs` when it was computed lately.
    func expectedMac(_ right: SessionRight, session: String) -> MacCache.Mac {
        macs.mac(session: session, right: right) { MacCache.Mac(mac(right, session: session)) }
    }

    func mac(_ right: SessionRight, session: String) -> [UInt8] {
        var message = Array("flowbus-capability/1".utf8)
        message.append(0)
        message += Array(right.rawValue.utf8)
        message.append(0)
        message += Array(session.utf8)
        return Array(HMACSHA256.code(for: message, key: bytes).prefix(Self.macBytes))
    }
}

/// The expected macs of recent (session, right) pairs, for one key. Bounded: past `capacity`
/// entries it starts over (a host with more live sessions than that computes some macs again).
/// An entry is some 40 bytes: the session id (inline when short) and the 128-bit mac.
final class MacCache: Sendable {
    struct Key: Hashable {
        var session: String
        var right: SessionRight
    }

    /// A 128-bit mac as two words: kept without an array, compared in constant time.
    struct Mac: Equatable {
        /// Bytes 0–7 and 8–15, big-endian.
        var head: UInt64
        var tail: UInt64

        init(_ bytes: [UInt8]) {
            precondition(bytes.count == CapabilityKey.macBytes)
            head = bytes[0..<8].reduce(0) { $0 << 8 | UInt64($1) }
            tail = bytes[8..<16].reduce(0) { $0 << 8 | UInt64($1) }
        }

        /// The 16 bytes written as unpadded base64url (22 characters; "==" after them is
        /// accepted too), or nil for anything else.
        init?(base64URL text: Slice<UnsafeBufferPointer<UInt8>>) {
            var text = text
            if text.count == 24, text.suffix(2).allSatisfy({ $0 == UInt8(ascii: "=") }) { text = text.dropLast(2) }
            guard text.count == 22 else { return nil }
            var bytes: [UInt8] = []
            bytes.reserveCapacity(17)
            var accumulator: UInt32 = 0
            var bits = 0
            for character in text {
                guard let value = Self.sextet(character) else { return nil }
                accumulator = accumulator << 6 | UInt32(value)
                bits += 6
                if bits >= 8 {
                    bits -= 8
                    bytes.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                }
            }
            // 22 characters carry 132 bits: 16 bytes and 4 bits that must be zero.
            guard bytes.count == CapabilityKey.macBytes, accumulator & ((1 << UInt32(bits)) - 1) == 0 else { return nil }
            self.init(bytes)
        }

        /// The 16 bytes as unpadded base64url: 22 characters.
        var base64URL: String {
            let alphabet: StaticString = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
            return String(unsafeUninitializedCapacity: 22) { buffer in
                alphabet.withUTF8Buffer { letters in
                    var written = 0
                    var accumulator: UInt32 = 0
                    var bits = 0
                    for index in 0..<16 {
                        let word = index < 8 ? head : tail
                        let shift = UInt64(56 - 8 * (index % 8))
                        accumulator = accumulator << 8 | UInt32(UInt8(truncatingIfNeeded: word >> shift))
                        bits += 8
                        while bits >= 6 {
                            bits -= 6
                            buffer[written] = letters[Int(accumulator >> UInt32(bits) & 63)]
                            written += 1
                        }
                    }
                    // 128 bits leave 2: the last character carries them followed by four zero bits.
                    buffer[written] = letters[Int(accumulator << UInt32(6 - bits) & 63)]
                    return written + 1
                }
            }
        }

        static func sextet(_ character: UInt8) -> UInt8? {
            switch character {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): character - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): character - UInt8(ascii: "a") + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0") + 52
            case UInt8(ascii: "-"): 62
            case UInt8(ascii: "_"): 63
            default: nil
            }
        }

        /// Equal, in the same time however many bits match.
        func matches(_ other: Mac) -> Bool {
            (head ^ other.head) | (tail ^ other.tail) == 0
        }
    }

    static let capacity = 8_192
    private let entries = Mutex<[Key: Mac]>([:])

    /// The mac of (`session`, `right`), computed by `compute` when not kept.
    func mac(session: String, right: SessionRight, compute: () -> Mac) -> Mac {
        let key = Key(session: session, right: right)
        if let kept = entries.withLock({ $0[key] }) { return kept }
        let mac = compute()
        entries.withLock { entries in
            if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
            entries[key] = mac
        }
        return mac
    }

    var count: Int { entries.withLock { $0.count } }
}
