/// A subscription prefix for 12/CHP (`ICANHAZ?` frame 1 and the SUB socket's filter).
///
/// Every Flowbus subtree ends in `/`, so `/s/abc/` never matches the keys of session `abcd`.
public struct CloneSubtree: Hashable, Sendable, CustomStringConvertible {
    /// The prefix, e.g. `/s/abc/`; empty for the whole hashmap.
    public let text: String

    private init(_ text: String) {
        self.text = text
    }

    /// Every key: the empty subtree.
    public static let everything = CloneSubtree("")
    /// `/s/`: every session's keys.
    public static let allSessions = CloneSubtree("/s/")
    /// `/v/`: every screen-tree key.
    public static let allScreens = CloneSubtree("/v/")
    /// `/host/`: every host fact.
    public static let host = CloneSubtree("/host/")
    /// `/c/`: every live coordinator instance.
    public static let allCoordinators = CloneSubtree("/c/")
    /// `/schema/`: every app's published payload schemas.
    public static let schemas = CloneSubtree("/schema/")

    /// `/s/<id>/`: navigation, view models and record of one session.
    public static func session(_ id: SessionID) -> CloneSubtree { CloneSubtree("/s/\(id)/") }

    /// `/s/<id>/vm/`: the view-model states of one session.
    public static func viewModels(of id: SessionID) -> CloneSubtree { CloneSubtree("/s/\(id)/vm/") }

    /// `/c/<name>/`: the live instances of one coordinator, one per session.
    public static func coordinator(_ name: CoordinatorName) -> CloneSubtree { CloneSubtree("/c/\(name)/") }

    /// `/v/<name>/`: one screen's view-model state in every session.
    public static func screen(_ name: ScreenName) -> CloneSubtree { CloneSubtree("/v/\(name)/") }

    /// Whether a key lies in this subtree, by the same byte-prefix test a ZeroMQ SUB socket applies.
    public func contains(_ key: String) -> Bool {
        key.utf8.starts(with: text.utf8)
    }

    public func contains(_ key: CloneKey) -> Bool { contains(key.text) }

    /// The prefix as it travels in frames.
    public var bytes: [UInt8] { Array(text.utf8) }

    public var description: String { text }
}

/// `/s/<id>/`, the subtree of one session (same as `CloneSubtree.session(id)`).
public func sessionSubtree(_ id: SessionID) -> CloneSubtree { .session(id) }

/// `/v/<name>/`, the subtree of one screen across sessions (same as `CloneSubtree.screen(name)`).
public func screenSubtree(_ name: ScreenName) -> CloneSubtree { .screen(name) }
