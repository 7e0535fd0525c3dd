import FlowProtocol
import SwiftProtobuf

/// The navigation owner's navigation of each session, kept as its protobuf bytes with its version
/// beside them. Decoded, a navigation is a tree of message objects and strings (screens, their
/// actions and labels, the last applied keys) some three times the size of its bytes, held for
/// every open session; the owner decodes one only when a call changes it (microseconds, against a
/// hop of tens), and reads the version, which every intent's reply carries, without decoding.
struct NavigationTable {
    private var entries: [SessionID: (version: UInt64, bytes: [UInt8])] = [:]

    var count: Int { entries.count }

    /// The session's navigation, decoded; nil when the session has none.
    subscript(session: SessionID) -> Navigation? {
        get {
            entries[session].flatMap { try? Navigation(serializedBytes: $0.bytes) }
        }
        set {
            guard let navigation = newValue else {
                entries[session] = nil
                return
            }
            // A navigation is strings, numbers and messages without required fields: encoding it
            // does not fail. Were it to, the session keeps the navigation it had.
            guard let bytes: [UInt8] = try? navigation.serializedBytes(partial: true) else {
                assertionFailure("a navigation could not be encoded")
                return
            }
            entries[session] = (navigation.version, bytes)
        }
    }

    /// The version of the session's navigation, without decoding it.
    func version(of session: SessionID) -> UInt64? {
        entries[session]?.version
    }

    func contains(_ session: SessionID) -> Bool {
        entries[session] != nil
    }

    /// Every session's navigation, decoded (a restart's pass over them all).
    var all: [(session: SessionID, navigation: Navigation)] {
        entries.compactMap { session, entry in
            (try? Navigation(serializedBytes: entry.bytes)).map { (session, $0) }
        }
    }
}
