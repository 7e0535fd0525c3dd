import Clone
import FlowProtocol
import SwiftProtobuf

/// The navigation owner's navigation of each session, kept as its protobuf bytes with its version
/// beside them. Decoded, a navigation is a tree of message objects and strings (screens, their
/// actions and labels, the last applied keys) some three times the size of its bytes, held for
/// every open session; the owner decodes one only when a call changes it (microseconds, against a
/// hop of tens), and reads the version, which every intent's reply carries, without decoding.
struct NavigationTable {
    private var entries: [SessionID: (version: UInt64, bytes: [UInt8], packed: Bool)] = [:]
    /// Sessions' navigations differ in a few ids: each is held packed against a similar one
    /// (`ValueDeltas`; a sign-in screen's 360 bytes are some 90).
    private var deltas = ValueDeltas(limits: .init(references: 32, referencesPerShape: 32))
    /// The sessions whose navigation changed last, held as they are: packing tries every
    /// reference (tens of microseconds on the owner's reply to each `navigate`), so a session
    /// being navigated now is packed only once `hotLimit` other sessions changed after it. Memory
    /// per session is as before; the unpacked ones are a fixed few.
    private var hot: [SessionID] = []
    static let hotLimit = 16
    /// The key a session's navigation is packed under: the same shape for every session, and the
    /// session's id as its name (a navigation names its session; the delta writes that as a byte).
    private static func key(_ session: SessionID) -> [UInt8] {
        Array("/s/\(session.text)/nav".utf8)
    }

    var count: Int { entries.count }

    /// The session's navigation, decoded; nil when the session has none.
    subscript(session: SessionID) -> Navigation? {
        get {
            entries[session].flatMap { bytes(of: $0, session: session) }.flatMap { try? Navigation(serializedBytes: $0) }
        }
        set {
            guard let navigation = newValue else {
                entries[session] = nil
                hot.removeAll { $0 == session }
                return
            }
            // A navigation is strings, numbers and messages without required fields: encoding it
            // does not fail. Were it to, the session keeps the navigation it had.
            guard let bytes: [UInt8] = try? navigation.serializedBytes(partial: true) else {
                assertionFailure("a navigation could not be encoded")
                return
            }
            entries[session] = (navigation.version, bytes, false)
            guard !hot.contains(session) else { return }
            hot.append(session)
            if hot.count > Self.hotLimit { pack(hot.removeFirst()) }
        }
    }

    /// Packs the session's navigation if it is held as it is and packs well.
    private mutating func pack(_ session: SessionID) {
        guard let entry = entries[session], !entry.packed, let packed = deltas.pack(entry.bytes, key: Self.key(session)) else { return }
        entries[session] = (entry.version, packed, true)
    }

    /// The navigation's bytes; nil only if a delta this table made could not be read (a bug).
    private func bytes(of entry: (version: UInt64, bytes: [UInt8], packed: Bool), session: SessionID) -> [UInt8]? {
        entry.packed ? deltas.unpack(entry.bytes, key: Self.key(session)) : entry.bytes
    }

    /// The version of the session's navigation, without decoding it.
    func version(of session: SessionID) -> UInt64? {
        entries[session]?.version
    }

    /// How many navigations are held packed, the bytes held, and the bytes they are whole.
    var heldBytes: (packed: Int, bytes: Int, whole: Int) {
        entries.values.reduce(into: (0, 0, 0)) { sum, entry in
            if entry.packed { sum.packed += 1 }
            sum.bytes += entry.bytes.count
            sum.whole += entry.packed ? ValueDeltas.unpackedCount(entry.bytes) : entry.bytes.count
        }
    }

    /// Whether the session's navigation is held packed (tests).
    func isPacked(_ session: SessionID) -> Bool {
        entries[session]?.packed ?? false
    }

    func contains(_ session: SessionID) -> Bool {
        entries[session] != nil
    }

    /// Every session's navigation, decoded (a restart's pass over them all).
    var all: [(session: SessionID, navigation: Navigation)] {
        entries.compactMap { session, entry in
            bytes(of: entry, session: session).flatMap { try? Navigation(serializedBytes: $0) }.map { (session, $0) }
        }
    }
}
