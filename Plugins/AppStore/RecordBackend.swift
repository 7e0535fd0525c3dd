import Foundation

/// Where a `RecordStore` keeps its records and replies: SQLite through GRDB (one services
/// process, a file in the run directory) or PostgreSQL through libpq (any number of replicas
/// sharing one database).
protocol RecordBackend: Sendable {
    /// Where the records are, as an error message names it (a path, or the database's address
    /// without its password).
    var location: String { get }

    /// Runs `body` in one write transaction, committed when it returns, rolled back when it
    /// throws. Write transactions never run at once, whichever process opens them (SQLite's
    /// single writer; a PostgreSQL advisory lock), so they commit in the order they began.
    func write<T>(_ body: (any RecordTransaction) throws -> T) throws -> T

    /// Runs `body` on what is committed.
    func read<T>(_ body: (any RecordTransaction) throws -> T) throws -> T
}

/// The statements of one transaction.
protocol RecordTransaction: AnyObject {
    func put(_ kind: String, _ key: String, _ value: Data) throws
    func delete(_ kind: String, _ key: String) throws
    func all(_ kind: String) throws -> [String: Data]
    func keptReply(_ key: String) throws -> [UInt8]?
    /// Keeps the first reply for `key` and prunes all but the newest `capacity`.
    func keep(_ key: String, _ reply: [UInt8], capacity: Int) throws

    /// For a store other processes write too: every record written or deleted after `version`
    /// (a delete as a nil value), oldest first, and the newest version committed. Nil when this
    /// process is the store's only writer (SQLite), so its memory is never behind.
    func changes(after version: Int64) throws -> (changes: [(kind: String, key: String, value: Data?)], version: Int64)?

    /// The newest version this transaction wrote (0 if none, or if the backend keeps no versions).
    var writtenVersion: Int64 { get }
    /// Whether a put or a delete ran in this transaction.
    var wroteRecords: Bool { get }
}
