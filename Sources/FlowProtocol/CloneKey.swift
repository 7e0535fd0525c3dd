/// A key of Flowbus's Clone hashmap, parsed into the tree it belongs to.
///
/// ```
/// /s/<session>/nav            navigation of a session       (flowbus.v1.Navigation)
/// /s/<session>/vm/<screen>    a screen's view-model state   (flowbus.v1.ViewState)
/// /s/<session>/meta           the session's record
/// /v/<screen>/<session>       the same view-model state, published again by its writer
/// /c/<coordinator>/<session>  a live coordinator instance    (flowbus.v1.CoordinatorInstance)
/// /host/<segment>/...         facts about the host
/// /schema/<package>           an app's payload schemas      (google.protobuf.FileDescriptorSet)
/// ```
public enum CloneKey: Hashable, Sendable, CustomStringConvertible {
    case navigation(SessionID)
    case viewModel(SessionID, ScreenName)
    case sessionMeta(SessionID)
    /// The screen-tree copy of `viewModel(session, screen)`, so one subscription follows a screen across sessions.
    case screenMirror(ScreenName, SessionID)
    /// A live coordinator instance of a session; deleted when the instance is released.
    case coordinatorInstance(CoordinatorName, SessionID)
    case host(HostPath)
    /// An app's payload schemas, published by its view models (`AppSchema`).
    case appSchema(package: String)

    /// The trees whose values are envelopes (all of them): a Flowbus Clone server applies no
    /// value under them that does not end with its check (Protocols/README.md §5).
    public static let envelopeTrees = ["/s/", "/v/", "/c/", "/host/", "/schema/"]

    /// Parses a key; throws when it breaks the grammar or fits none of the trees.
    public init(parsing text: String) throws(NameError) {
        let segments = try CloneKeyGrammar.segments(of: text)
        switch segments.count {
        case 3 where segments[0] == "s" && segments[2] == "nav":
            self = .navigation(try SessionID(String(segments[1])))
        case 3 where segments[0] == "s" && segments[2] == "meta":
            self = .sessionMeta(try SessionID(String(segments[1])))
        case 4 where segments[0] == "s" && segments[2] == "vm":
            self = .viewModel(try SessionID(String(segments[1])), try ScreenName(String(segments[3])))
        case 3 where segments[0] == "v":
            self = .screenMirror(try ScreenName(String(segments[1])), try SessionID(String(segments[2])))
        case 3 where segments[0] == "c":
            self = .coordinatorInstance(try CoordinatorName(String(segments[1])), try SessionID(String(segments[2])))
        case 2 where segments[0] == "schema":
            self = .appSchema(package: String(segments[1]))
        case 2... where segments[0] == "host":
            self = .host(try HostPath(segments.dropFirst().map(String.init)))
        default:
            throw .unknownKeyShape(text: text)
        }
    }

    /// The key as it travels in frame 0 of KVSET, KVPUB and KVSYNC.
    public var text: String {
        switch self {
        case .navigation(let session): "/s/\(session)/nav"
        case .viewModel(let session, let screen): "/s/\(session)/vm/\(screen)"
        case .sessionMeta(let session): "/s/\(session)/meta"
        case .screenMirror(let screen, let session): "/v/\(screen)/\(session)"
        case .coordinatorInstance(let coordinator, let session): "/c/\(coordinator)/\(session)"
        case .host(let path): "/host/\(path)"
        case .appSchema(let package): "/schema/\(package)"
        }
    }

    public var bytes: [UInt8] { Array(text.utf8) }

    /// The session the key is about, if any.
    public var session: SessionID? {
        switch self {
        case .navigation(let session), .sessionMeta(let session), .viewModel(let session, _), .screenMirror(_, let session),
             .coordinatorInstance(_, let session): session
        case .host, .appSchema: nil
        }
    }

    /// The screen the key is about, if any.
    public var screen: ScreenName? {
        switch self {
        case .viewModel(_, let screen), .screenMirror(let screen, _): screen
        case .navigation, .sessionMeta, .coordinatorInstance, .host, .appSchema: nil
        }
    }

    /// True for keys in a session subtree `/s/<id>/`: the ones the clone server chains with `sprev`.
    public var isInSessionTree: Bool {
        switch self {
        case .navigation, .viewModel, .sessionMeta: true
        case .screenMirror, .coordinatorInstance, .host, .appSchema: false
        }
    }

    /// The two keys a view-model writer publishes for one state change: screen tree, then session
    /// tree. The server applies one writer's changes in order, so a client that saw a state under
    /// `/s/` knows the copy the view model restores from after a restart holds it too (written the
    /// other way round, a host killed between the two brought back a state the client never saw).
    public static func viewModelKeys(session: SessionID, screen: ScreenName) -> [CloneKey] {
        [.screenMirror(screen, session), .viewModel(session, screen)]
    }

    public var description: String { text }
}
