/// The grammar every Flowbus clone key follows, whatever tree it is in:
/// ASCII, starts with `/`, at most 255 bytes, segments of `[A-Za-z0-9._-]+` separated by single `/`,
/// no empty segment (so no trailing `/`; only subtrees end in `/`).
public enum CloneKeyGrammar {
    /// 12/CHP keys are at most 255 bytes.
    public static let maximumBytes = 255

    /// The key's segments, after checking the grammar.
    public static func segments(of key: String) throws(NameError) -> [Substring] {
        guard !key.isEmpty else { throw .empty(what: "clone key") }
        let bytes = key.utf8.count
        guard bytes <= maximumBytes else { throw .tooLong(what: "clone key", text: key, bytes: bytes, limit: maximumBytes) }
        guard key.utf8.first == UInt8(ascii: "/") else { throw .missingLeadingSlash(text: key) }
        // Split on the byte '/': it never falls inside a character, and bytes are cheaper to walk.
        let segments = key.utf8.dropFirst().split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).map(Substring.init)
        for segment in segments {
            guard !segment.isEmpty else { throw .emptySegment(text: key) }
            do throws(NameError) {
                try NameRules.checkSegment(segment, what: "clone key segment", limit: maximumBytes)
            } catch .invalidCharacter(_, _, let character, let allowed) {
                throw .invalidCharacter(what: "clone key", text: key, character: character, allowed: allowed + " between '/'")
            } catch .dotSegment {
                throw .dotSegment(what: "clone key", text: key)
            } catch {
                throw error
            }
        }
        return segments
    }

    /// Checks `key` against the grammar without caring which tree it is in.
    public static func validate(_ key: String) throws(NameError) {
        _ = try segments(of: key)
    }
}
