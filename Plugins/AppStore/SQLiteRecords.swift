import Foundation
import GRDB

/// Records in one SQLite file through GRDB, in WAL mode with `synchronous = NORMAL`: a committed
/// write survives the death of any process; a power loss or kernel crash may lose the last
/// transactions, never corrupt the file. One services process owns the file.
struct SQLiteRecords: RecordBackend {
    let database: any DatabaseWriter
    let location: String

    /// Opens (or creates) the database at `path`, making its folder owner-only if missing.
    init(path: String) throws {
        let folder = (path as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        var configuration = Configuration()
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
        database = try DatabasePool(path: path, configuration: configuration)
        location = path
        try Self.migrate(database)
    }

    /// A database in memory (unit tests).
    init() throws {
        database = try DatabaseQueue()
        location = ":memory:"
        try Self.migrate(database)
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

    func write<T>(_ body: (any RecordTransaction) throws -> T) throws -> T {
        try database.write { db in try body(SQLiteTransaction(db)) }
    }

    func read<T>(_ body: (any RecordTransaction) throws -> T) throws -> T {
        try database.read { db in try body(SQLiteTransaction(db)) }
    }
}

/// Statements are prepared once per connection (`cachedStatement`): a call's few statements are
/// not parsed again on every call.
final class SQLiteTransaction: RecordTransaction {
    let db: Database
    private(set) var wroteRecords = false

    init(_ db: Database) { self.db = db }

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
        try Data.fetchOne(db.cachedStatement(sql: "SELECT value FROM replies WHERE key = ?"), arguments: [key]).map { [UInt8]($0) }
    }

    func keep(_ key: String, _ reply: [UInt8], capacity: Int) throws {
        try db.cachedStatement(sql: "INSERT OR IGNORE INTO replies (key, value) VALUES (?, ?)").execute(arguments: [key, Data(reply)])
        try db.cachedStatement(sql: "DELETE FROM replies WHERE sequence <= (SELECT MAX(sequence) FROM replies) - ?").execute(arguments: [capacity])
    }

    func changes(after version: Int64) throws -> (changes: [(kind: String, key: String, value: Data?)], version: Int64)? { nil }

    var writtenVersion: Int64 { 0 }
}
