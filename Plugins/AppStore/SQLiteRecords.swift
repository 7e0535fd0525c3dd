import Foundation
import GRDB
import Synchronization

/// Records in one SQLite file through GRDB, in WAL mode with `synchronous = NORMAL`: a committed
/// write survives the death of any process; a power loss or kernel crash may lose the last
/// transactions, never corrupt the file. One services process owns the file.
///
/// Every call a service answers opens a write transaction here (`RecordStore.answer`), so the
/// transaction's own costs are kept low: it begins and commits through statements prepared once,
/// a call whose key was never kept is told so from memory (`KeptKeys`) without a query, and old
/// replies are pruned a batch at a time, not one a call.
struct SQLiteRecords: RecordBackend {
    let database: any DatabaseWriter
    let location: String
    /// The keys of the replies in the file, as far as this process knows them.
    let keys = KeptKeys()

    /// Opens (or creates) the database at `path`, making its folder owner-only if missing.
    init(path: String) throws {
        let folder = (path as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        var configuration = Configuration()
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
        database = try DatabasePool(path: path, configuration: configuration)
        location = path
        try Self.migrate(database)
        try keys.load(database)
    }

    /// A database in memory (unit tests).
    init() throws {
        database = try DatabaseQueue()
        location = ":memory:"
        try Self.migrate(database)
        try keys.load(database)
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

    /// One IMMEDIATE transaction (the write lock taken at its start, as GRDB's `write` takes it),
    /// begun and committed by statements prepared once per connection: GRDB's `write` parses its
    /// BEGIN again on every call. Rolled back when `body` or the commit throws.
    func write<T>(_ body: (any RecordTransaction) throws -> T) throws -> T {
        try database.writeWithoutTransaction { db in
            try db.cachedStatement(sql: "BEGIN IMMEDIATE TRANSACTION").execute()
            do {
                let result = try body(SQLiteTransaction(db, keys: keys))
                try db.cachedStatement(sql: "COMMIT TRANSACTION").execute()
                return result
            } catch {
                if db.isInsideTransaction { try? db.rollback() }
                throw error
            }
        }
    }

    func read<T>(_ body: (any RecordTransaction) throws -> T) throws -> T {
        try database.read { db in try body(SQLiteTransaction(db, keys: keys)) }
    }
}

/// The keys of the replies kept in the file: read once when it opens, added to as replies are
/// kept, taken from as they are pruned. A key it lacks was never kept (this process is the file's
/// only writer), so `keptReply` answers nil without a query; a key it holds is looked up. A
/// transaction rolled back may leave a key here that the file lacks (looked up, not found), or
/// take away one it pruned (a reply older than the newest `capacity`, which is let go anyway).
final class KeptKeys: Sendable {
    private let keys = Mutex(Set<String>())

    func load(_ database: any DatabaseWriter) throws {
        let all = try database.read { db in try String.fetchAll(db, sql: "SELECT key FROM replies") }
        keys.withLock { $0 = Set(all) }
    }

    func mayHold(_ key: String) -> Bool { keys.withLock { $0.contains(key) } }
    func insert(_ key: String) { _ = keys.withLock { $0.insert(key) } }
    func remove(_ removed: [String]) { keys.withLock { for key in removed { $0.remove(key) } } }
}

/// Statements are prepared once per connection (`cachedStatement`): a call's few statements are
/// not parsed again on every call.
final class SQLiteTransaction: RecordTransaction {
    let db: Database
    let keys: KeptKeys
    private(set) var wroteRecords = false

    init(_ db: Database, keys: KeptKeys) {
        self.db = db
        self.keys = keys
    }

    func put(_ kind: String, _ key: String, _ value: Data) throws {
        wroteRecords = true
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO records (kind, key, value) VALUES (?, ?, ?)").execute(arguments: [kind, key, value])
    }

    func delete(_ kind: String, _ key: String) throws {
        wroteRecords = true
        try db.cachedStatement(sql: "DELETE FROM records WHERE kind = ? AND key = ?").execute(arguments: [kind, key])
    }

    func all(_ kind: String) throws -> [String: Data] {
        var records: [String: Data] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT key, value FROM records WHERE kind = ?", arguments: [kind]) {
            records[row["key"]] = row["value"]
        }
        return records
    }

    func keptReply(_ key: String) throws -> [UInt8]? {
        guard keys.mayHold(key) else { return nil }
        return try Data.fetchOne(db.cachedStatement(sql: "SELECT value FROM replies WHERE key = ?"), arguments: [key]).map { [UInt8]($0) }
    }

    /// Keeps the first reply for `key`. The replies beyond the newest `capacity` go a batch at a
    /// time (a sixteenth of `capacity`, at least one): when the new reply's sequence number is a
    /// multiple of the batch, so between `capacity` and `capacity + batch - 1` are kept. Each
    /// pruning touches the oldest pages of the table and its key index; once a call, it was
    /// two more pages written to the log with every reply.
    func keep(_ key: String, _ reply: [UInt8], capacity: Int) throws {
        try db.cachedStatement(sql: "INSERT OR IGNORE INTO replies (key, value) VALUES (?, ?)").execute(arguments: [key, Data(reply)])
        guard db.changesCount > 0 else { return }
        keys.insert(key)
        let sequence = db.lastInsertedRowID
        let batch = Int64(max(1, capacity / 16))
        guard sequence % batch == 0 else { return }
        let pruned = try String.fetchAll(
            db.cachedStatement(sql: "DELETE FROM replies WHERE sequence <= ? RETURNING key"), arguments: [sequence - Int64(capacity)])
        keys.remove(pruned)
    }

    func changes(after version: Int64) throws -> (changes: [(kind: String, key: String, value: Data?)], version: Int64)? { nil }

    var writtenVersion: Int64 { 0 }
}
