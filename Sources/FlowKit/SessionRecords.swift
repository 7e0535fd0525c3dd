import FlowProtocol
import SwiftProtobuf

/// The navigation owner's record of each open session (`/s/<id>/meta`), kept as its protobuf
/// bytes without the session's id, which the table's key says. Decoded, a record is some 100
/// bytes of strings and numbers in every slot of the table, for every open session; encoded, it
/// is about 30 bytes on the heap and one word in the slot. The owner reads one when a session
/// opens, closes, or its user or flow changes (a microsecond to decode).
struct SessionRecords {
    private var entries: [SessionID: [UInt8]] = [:]

    var count: Int { entries.count }

    /// When the session was opened (its record's `opened_at_unix_nanos`), 0 without a record.
    func openedAt(_ session: SessionID) -> Int64 {
        self[session]?.openedAtUnixNanos ?? 0
    }

    subscript(session: SessionID) -> Flowbus_V1_SessionRecord? {
        get {
            guard let bytes = entries[session], var record = try? Flowbus_V1_SessionRecord(serializedBytes: bytes) else { return nil }
            record.session = session.text
            return record
        }
        set {
            guard var record = newValue else {
                entries[session] = nil
                return
            }
            record.session = ""
            // Strings and numbers only: encoding does not fail. Were it to, the session keeps the
            // record it had.
            guard let bytes: [UInt8] = try? record.serializedBytes() else {
                assertionFailure("a session record could not be encoded")
                return
            }
            entries[session] = bytes
        }
    }
}
