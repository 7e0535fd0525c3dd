import Foundation

/// One change of an agent's map, as its consumers see it.
public struct CloneUpdate: Sendable, Equatable {
    public var key: String
    /// Empty for a delete.
    public var value: [UInt8]
    /// The global sequence of the KVPUB, or the snapshot's sequence for a change a snapshot made.
    public var sequence: UInt64
    public var properties: CloneProperties
    public var uuid: UUID?
    public var isDelete: Bool
    /// True when the change came from a snapshot (first sync or a resync), not a live KVPUB.
    public var fromSnapshot: Bool

    public init(
        key: String, value: [UInt8], sequence: UInt64, properties: CloneProperties = [], uuid: UUID? = nil,
        isDelete: Bool, fromSnapshot: Bool
    ) {
        self.key = key
        self.value = value
        self.sequence = sequence
        self.properties = properties
        self.uuid = uuid
        self.isDelete = isDelete
        self.fromSnapshot = fromSnapshot
    }

    /// A live KVPUB's change.
    init(published record: CloneRecord) {
        self.init(key: record.key, value: record.value, sequence: record.sequence, properties: record.properties,
                  uuid: record.uuid, isDelete: record.value.isEmpty, fromSnapshot: false)
    }

    /// The value as UTF-8 text (for tools and tests).
    public var text: String { String(decoding: value, as: UTF8.self) }
}

/// Why `set` or `delete` refused a write.
public enum CloneWriteError: Error, Sendable, Equatable, CustomStringConvertible {
    case invalid(CloneDecodeError)
    case backlogFull(held: Int)
    case stopped

    public var description: String {
        switch self {
        case .invalid(let error):
            "the write was refused: \(error)"
        case .backlogFull(let held):
            "\(held) writes are waiting for the clone server's collector; check that the host is running "
                + "and reachable, or slow down the writer"
        case .stopped:
            "the clone agent has been stopped; start a new one to write"
        }
    }
}
