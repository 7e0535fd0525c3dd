/// The part after `/host/` of a host fact's key, e.g. `plugins/echo` in `/host/plugins/echo`.
public struct HostPath: Hashable, Sendable, CustomStringConvertible {
    /// 255 minus the 6 bytes of `/host/`.
    public static let maximumBytes = CloneKeyGrammar.maximumBytes - 6

    public let segments: [String]

    public init(_ segments: [String]) throws(NameError) {
        guard !segments.isEmpty else { throw .empty(what: "host path") }
        for segment in segments {
            try NameRules.checkSegment(segment, what: "host path segment", limit: Self.maximumBytes)
        }
        let joined = segments.joined(separator: "/")
        guard joined.utf8.count <= Self.maximumBytes else {
            throw .tooLong(what: "host path", text: joined, bytes: joined.utf8.count, limit: Self.maximumBytes)
        }
        self.segments = segments
    }

    /// Splits `path` at `/`: `HostPath(parsing: "plugins/echo")`.
    public init(parsing path: String) throws(NameError) {
        try self.init(path.split(separator: "/", omittingEmptySubsequences: false).map(String.init))
    }

    public var description: String { segments.joined(separator: "/") }
}
