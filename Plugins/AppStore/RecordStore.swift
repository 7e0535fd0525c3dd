import Foundation
import GRDB

/// The sample apps' durable records: one SQLite table of (kind, key) → value, written through
/// GRDB before a service answers, so a reply the app sent is never lost to a kill -9 of the
/// services or the host. The services keep their working set in memory and load it from here
/// when they start.
///
/// The file is in WAL mode with `synchronous = NORMAL`: a committed write survives the death of
/// any process; a power loss or kernel crash may lose the last transactions, never corrupt the file.
///
/// It also keeps the services' replies by idempotency key (`RecordStore+Replies.swift`).
public final class RecordStore: Sendable {
    let database: any DatabaseWriter
    /// Where the records live (`:memory:` for a store made for tests).
    public let path: String
    /// How many replies are kept: the newest; older ones are pruned as new ones come.
    public let replyCapacity: Int
    /// Replies kept unless told otherwise: as many as the in-memory default keeps per service.
    public static let defaultReplyCapacity = 4096

    /// Opens (or creates) the database at `path`, making its folder owner-only if missing.
    public init(path: String, replyCapacity: Int = RecordStore.defaultReplyCapacity) throws(RecordStoreError) {
        self.replyCapacity = max(1, replyCapacity)
        let folder = (path as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            var configuration = Configuration()
            configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
            database = try DatabasePool(path: path, configuration: configuration)
            self.path = path
            try Self.migrate(database)
        } catch {
            throw RecordStoreError(path: path, reason: "\(error)")
        }
    }

    /// A store in memory: the same code paths, nothing on disk (unit tests).
    public init(replyCapacity: Int = RecordStore.defaultReplyCapacity) throws(RecordStoreError) {
        self.replyCapacity = max(1, replyCapacity)
        do {
            database = try DatabaseQueue()
            path = ":memory:"
            try Self.migrate(database)
        } catch {
            throw RecordStoreError(path: ":memory:", reason: "\(error)")
        }
    }

    static func migrate(_ database: any DatabaseWriter) throws {
        try database.write { db in
            try db.execute(sql: """
                CREATE TABLE IF NOT EXISTS records (
                    kind TEXT NOT NULL, key TEXT NOT NULL, value BLOB NOT NULL, PRIMARY KEY (kind, key)
                ) WITHOUT ROWID
                """)
            // Replies have a table of their own: the rowid orders them, so the oldest are pruned cheaply.
            try db.execute(sql: """
                CREATE TABLE IF NOT EXISTS replies (sequence INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, value BLOB NOT NULL)
                """)
        }
    }

    /// Writes (or replaces) one record; returns once it is committed.
    public func put(_ kind: String, _ key: String, _ value: Data) throws(RecordStoreError) {
        try write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO records (kind, key, value) VALUES (?, ?, ?)", arguments: [kind, key, value])
        }
    }

    /// Writes one record as JSON.
    public func put(_ kind: String, _ key: String, json value: some Encodable) throws(RecordStoreError) {
        let data: Data
        do { data = try JSONEncoder().encode(value) } catch { throw RecordStoreError(path: path, reason: "cannot encode \(kind)/\(key): \(error)") }
        try put(kind, key, data)
    }

    public func delete(_ kind: String, _ key: String) throws(RecordStoreError) {
        try write { db in try db.execute(sql: "DELETE FROM records WHERE kind = ? AND key = ?", arguments: [kind, key]) }
    }

    /// Applies `changes` in one transaction: after a kill -9 the file holds all of them or none.
    public func apply(_ changes: [RecordChange]) throws(RecordStoreError) {
        try write { db in
            for change in changes {
                switch change {
                case .put(let kind, let key, let value):
                    try db.execute(sql: "INSERT OR REPLACE INTO records (kind, key, value) VALUES (?, ?, ?)", arguments: [kind, key, value])
                case .delete(let kind, let key):
                    try db.execute(sql: "DELETE FROM records WHERE kind = ? AND key = ?", arguments: [kind, key])
                }
            }
        }
    }

    /// Every record of `kind`, by key.
    public func all(_ kind: String) throws(RecordStoreError) -> [String: Data] {
        do {
            return try read { db in
                var records: [String: Data] = [:]
                for row in try Row.fetchAll(db, sql: "SELECT key, value FROM records WHERE kind = ?", arguments: [kind]) {
                    records[row["key"]] = row["value"]
                }
                return records
            }
        } catch {
            throw RecordStoreError(path: path, reason: "\(error)")
        }
    }

    /// Every record of `kind`, decoded from JSON; a record that does not decode is an error
    /// (a damaged file is reported, never silently dropped).
    public func all<Value: Decodable>(_ kind: String, as type: Value.Type) throws(RecordStoreError) -> [String: Value] {
        var values: [String: Value] = [:]
        for (key, data) in try all(kind) {
            do { values[key] = try JSONDecoder().decode(Value.self, from: data) } catch {
                throw RecordStoreError(path: path, reason: "the \(kind) record \(key) does not decode: \(error)")
            }
        }
        return values
    }

    /// Runs `body` in a write transaction: the one `answer` holds open on this thread for this
    /// store, if any (its writes then commit with the reply), else a transaction of its own.
    func write<T>(_ body: (Database) throws -> T) throws(RecordStoreError) -> T {
        do {
            if let open = OpenTransaction.current, open.store == ObjectIdentifier(self) { return try body(open.database) }
            return try database.write(body)
        } catch {
            throw RecordStoreError(path: path, reason: "\(error)")
        }
    }

    /// Reads through the open transaction, if any (it sees its own writes), else from the file.
    func read<T>(_ body: (Database) throws -> T) throws -> T {
        if let open = OpenTransaction.current, open.store == ObjectIdentifier(self) { return try body(open.database) }
        return try database.read(body)
    }
}

/// One write of `RecordStore.apply`.
public enum RecordChange: Sendable {
    case put(kind: String, key: String, value: Data)
    case delete(kind: String, key: String)

    /// A put of `value` as JSON; throws the encoder's error.
    public static func put(_ kind: String, _ key: String, json value: some Encodable) throws -> RecordChange {
        .put(kind: kind, key: key, value: try JSONEncoder().encode(value))
    }
}

/// A record store that could not be opened, read or written.
public struct RecordStoreError: Error, CustomStringConvertible, Sendable {
    public var path: String
    public var reason: String

    public init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }

    public var description: String {
        "the app's data at \(path) could not be used: \(reason); check the disk and the run directory's permissions, or move the file away to start empty"
    }
}
