/// A session's id as it appears in clone keys (`/s/<id>/...`) and in `Envelope.session`:
/// 1 to 128 characters from `[A-Za-z0-9._-]`, not only dots.
public struct SessionID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public static let maximumBytes = 128

    public let text: String

    public init(_ text: String) throws(NameError) {
        try NameRules.checkSegment(text, what: "session id", limit: Self.maximumBytes)
        self.text = text
    }

    public var description: String { text }

    public static func < (lhs: SessionID, rhs: SessionID) -> Bool { lhs.text < rhs.text }
}
