/// Why a session id, screen name, service name or clone key was refused.
public enum NameError: Error, Sendable, Hashable, CustomStringConvertible {
    /// `what` is empty ("session id", "clone key", ...).
    case empty(what: String)
    case tooLong(what: String, text: String, bytes: Int, limit: Int)
    case invalidCharacter(what: String, text: String, character: Character, allowed: String)
    /// A segment made only of dots (`.` or `..`), which readers could take for a path step.
    case dotSegment(what: String, text: String)
    case missingLeadingSlash(text: String)
    case emptySegment(text: String)
    /// The key follows the grammar but none of the Flowbus trees (`/s/`, `/v/`, `/host/`).
    case unknownKeyShape(text: String)

    public var description: String {
        switch self {
        case .empty(let what):
            "The \(what) is empty; give at least one character."
        case .tooLong(let what, let text, let bytes, let limit):
            "The \(what) '\(text.prefix(80))…' has \(bytes) bytes, more than the limit of \(limit); use a shorter one."
        case .invalidCharacter(let what, let text, let character, let allowed):
            "The \(what) '\(text)' contains \(character.debugDescription), which is not allowed; use only \(allowed)."
        case .dotSegment(let what, let text):
            "The \(what) '\(text)' has a segment made only of dots; add a letter or digit to it."
        case .missingLeadingSlash(let text):
            "The clone key '\(text)' does not start with '/'; Flowbus keys look like /s/<session>/nav."
        case .emptySegment(let text):
            "The clone key '\(text)' has an empty segment ('//' or a trailing '/'); remove it."
        case .unknownKeyShape(let text):
            "The clone key '\(text)' is not one Flowbus defines; expected /s/<session>/nav, /s/<session>/meta, "
                + "/s/<session>/vm/<screen>, /v/<screen>/<session> or /host/<segments> (Protocols/README.md)."
        }
    }
}

/// The shared checks of every name: length in bytes and an allowed character set.
enum NameRules {
    static let segmentCharacters = "ASCII letters, digits, '.', '_' and '-'"
    static let lowercaseCharacters = "lowercase ASCII letters, digits, '.', '_' and '-'"

    static func isSegmentByte(_ byte: UInt8) -> Bool {
        isLowercaseByte(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }

    static func isLowercaseByte(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
            || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
    }

    /// Checks `text` against `limit` bytes and `allowed`, reporting the first bad character.
    static func check(
        _ text: some StringProtocol, what: String, limit: Int,
        allowed: (UInt8) -> Bool, allowedText: String
    ) throws(NameError) {
        guard !text.isEmpty else { throw .empty(what: what) }
        let bytes = text.utf8.count
        guard bytes <= limit else { throw .tooLong(what: what, text: String(text), bytes: bytes, limit: limit) }
        // Every allowed byte is ASCII, so a name is good exactly when each of its bytes is; only a
        // bad one is looked for again as a character, to name it (every change's key is checked
        // where it arrives: byte by byte is several times cheaper than character by character).
        guard !text.utf8.allSatisfy(allowed) else { return }
        let bad = text.first { character in !character.utf8.allSatisfy(allowed) || character.utf8.count != 1 } ?? " "
        throw .invalidCharacter(what: what, text: String(text), character: bad, allowed: allowedText)
    }

    /// Checks one key segment: segment characters, and not only dots.
    static func checkSegment(_ text: some StringProtocol, what: String, limit: Int, lowercase: Bool = false) throws(NameError) {
        try check(
            text, what: what, limit: limit,
            allowed: lowercase ? isLowercaseByte : isSegmentByte,
            allowedText: lowercase ? lowercaseCharacters : segmentCharacters
        )
        if text.utf8.allSatisfy({ $0 == UInt8(ascii: ".") }) { throw .dotSegment(what: what, text: String(text)) }
    }
}
