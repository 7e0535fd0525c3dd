import CLibPQ
import Foundation

/// Records in a PostgreSQL database through libpq, shared by every replica of a services process
/// (on one machine or several). Each app has a schema of its own in the database (`movies`,
/// `photos`), with two tables: `records` (kind, key) → value, each row stamped with the version
/// of its last write (a delete leaves the row with no value, so other replicas learn of it), and
/// `replies` by idempotency key.
///
/// Every write transaction first takes the schema's advisory lock, so writes from all replicas
/// run one at a time and commit in version order: a replica that has seen every version up to
/// V and reads the rows above V has seen everything committed.
final class PostgresRecords: RecordBackend, @unchecked Sendable {
    // Unchecked: `connection` is used only while `lock` is held.
    let connection: OpaquePointer
    let lock = NSLock()
    let schema: String
    let location: String

    /// Whether `text` names a PostgreSQL database (`postgresql://…` or `postgres://…`).
    static func isAddress(_ text: String) -> Bool {
        text.hasPrefix("postgresql://") || text.hasPrefix("postgres://")
    }

    /// Connects to the database `address` (a libpq URI, e.g.
    /// `postgresql://flowbus@127.0.0.1:5432/flowbus` or `postgresql:///flowbus?host=/run/postgresql`)
    /// and creates `schema` and its tables if missing.
    init(address: String, schema: String) throws {
        guard schema.range(of: "^[a-z_][a-z0-9_]{0,62}$", options: .regularExpression) != nil else {
            throw PostgresError("the schema name \"\(schema)\" is not a plain lower-case SQL name")
        }
        location = Self.redacted(address) + " (schema \(schema))"
        self.schema = schema
        guard let connection = PQconnectdb(address) else { throw PostgresError("libpq could not allocate a connection") }
        self.connection = connection
        // Every property is set: from here a throw runs deinit, which closes the connection.
        guard PQstatus(connection) == CONNECTION_OK else {
            throw PostgresError("cannot connect: \(Self.text(PQerrorMessage(connection))); check that PostgreSQL runs there and the address names a database this user may use")
        }
        // Quiet NOTICEs ("schema already exists, skipping") instead of libpq printing them to stderr.
        _ = try execute("SET client_min_messages TO warning")
        // Replicas starting at once would race on CREATE … IF NOT EXISTS: one migrates at a time.
        _ = try execute("SELECT pg_advisory_lock(\(Self.lockClass), hashtext('\(schema)'))")
        defer { _ = try? execute("SELECT pg_advisory_unlock(\(Self.lockClass), hashtext('\(schema)'))") }
        _ = try execute("""
            CREATE SCHEMA IF NOT EXISTS \(schema);
            SET search_path TO \(schema);
            CREATE TABLE IF NOT EXISTS records (
                kind text NOT NULL, key text NOT NULL, value bytea, version bigint NOT NULL, PRIMARY KEY (kind, key));
            CREATE INDEX IF NOT EXISTS records_by_version ON records (version);
            CREATE SEQUENCE IF NOT EXISTS record_versions;
            CREATE TABLE IF NOT EXISTS replies (sequence bigserial PRIMARY KEY, key text NOT NULL UNIQUE, value bytea NOT NULL)
            """)
    }

    deinit { PQfinish(connection) }

    /// The first number of the two-number advisory lock ("FLOW"), the second being the schema's hash.
    static let lockClass: Int32 = 0x464C_4F57

    func write<T>(_ body: (any RecordTransaction) throws -> T) throws -> T {
        lock.lock()
        defer { lock.unlock() }
        try reconnectIfLost()
        let transaction = PostgresTransaction(self)
        do {
            // Inside the `do`: a BEGIN whose lock failed is rolled back too, never left open.
            _ = try execute("BEGIN; SELECT pg_advisory_xact_lock(\(Self.lockClass), hashtext('\(schema)'))")
            let result = try body(transaction)
            _ = try execute("COMMIT")
            return result
        } catch {
            _ = try? execute("ROLLBACK")
            throw error
        }
    }

    func read<T>(_ body: (any RecordTransaction) throws -> T) throws -> T {
        lock.lock()
        defer { lock.unlock() }
        try reconnectIfLost()
        return try body(PostgresTransaction(self))
    }

    /// A connection the server closed (a restart of PostgreSQL) is opened again once; what this
    /// process missed meanwhile comes with the next transaction's changes.
    func reconnectIfLost() throws {
        guard PQstatus(connection) != CONNECTION_OK else { return }
        PQreset(connection)
        guard PQstatus(connection) == CONNECTION_OK else {
            throw PostgresError("the connection was lost and could not be opened again: \(Self.text(PQerrorMessage(connection)))")
        }
        _ = try execute("SET client_min_messages TO warning; SET search_path TO \(schema)")
    }

    /// One parameter of a statement, sent in binary.
    enum Parameter {
        case text(String)
        case bytes(Data)
        case integer(Int64)

        var type: Oid {
            switch self {
            case .text: 25
            case .bytes: 17
            case .integer: 20
            }
        }

        var bytes: [UInt8] {
            switch self {
            case .text(let text): Array(text.utf8)
            case .bytes(let data): Array(data)
            case .integer(let value): withUnsafeBytes(of: value.bigEndian) { Array($0) }
            }
        }
    }

    /// Runs `sql` (one statement with `$1…` parameters, or several without); rows come back in
    /// binary. Throws the server's message when the statement failed.
    func execute(_ sql: String, _ parameters: [Parameter] = []) throws -> PostgresRows {
        let result: OpaquePointer?
        if parameters.isEmpty {
            result = PQexec(connection, sql)
        } else {
            let buffers = parameters.map(\.bytes)
            let types = parameters.map(\.type)
            let lengths = buffers.map { Int32($0.count) }
            let formats = [Int32](repeating: 1, count: parameters.count)
            let pointers: [UnsafeMutablePointer<CChar>] = buffers.map { bytes in
                let pointer = UnsafeMutablePointer<CChar>.allocate(capacity: max(1, bytes.count))
                bytes.withUnsafeBytes { raw in
                    if let base = raw.baseAddress { UnsafeMutableRawPointer(pointer).copyMemory(from: base, byteCount: bytes.count) }
                }
                return pointer
            }
            defer { pointers.forEach { $0.deallocate() } }
            let values: [UnsafePointer<CChar>?] = pointers.map { UnsafePointer($0) }
            result = PQexecParams(connection, sql, Int32(parameters.count), types, values, lengths, formats, 1)
        }
        guard let result else { throw PostgresError("out of memory: \(Self.text(PQerrorMessage(connection)))") }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            let message = Self.text(PQresultErrorMessage(result))
            PQclear(result)
            throw PostgresError(message.isEmpty ? Self.text(PQerrorMessage(connection)) : message)
        }
        return PostgresRows(result)
    }

    static func text(_ pointer: UnsafePointer<CChar>?) -> String {
        pointer.map { String(cString: $0).trimmingCharacters(in: .whitespacesAndNewlines) } ?? ""
    }

    /// `address` with its password, if any, replaced by `***`.
    static func redacted(_ address: String) -> String {
        guard let scheme = address.range(of: "://"), let at = address.range(of: "@", range: scheme.upperBound..<address.endIndex),
              let colon = address.range(of: ":", range: scheme.upperBound..<at.lowerBound)
        else { return address }
        return String(address[..<colon.upperBound]) + "***" + String(address[at.lowerBound...])
    }
}

/// The rows of one statement, in binary.
final class PostgresRows {
    let result: OpaquePointer

    init(_ result: OpaquePointer) { self.result = result }
    deinit { PQclear(result) }

    var count: Int { Int(PQntuples(result)) }

    func isNull(_ row: Int, _ column: Int) -> Bool { PQgetisnull(result, Int32(row), Int32(column)) == 1 }

    func data(_ row: Int, _ column: Int) -> Data {
        let length = Int(PQgetlength(result, Int32(row), Int32(column)))
        guard length > 0, let value = PQgetvalue(result, Int32(row), Int32(column)) else { return Data() }
        return Data(bytes: value, count: length)
    }

    func text(_ row: Int, _ column: Int) -> String { String(decoding: data(row, column), as: UTF8.self) }

    /// A bigint column (8 bytes, big-endian); 0 when null.
    func integer(_ row: Int, _ column: Int) -> Int64 {
        data(row, column).reduce(Int64(0)) { ($0 << 8) | Int64($1) }
    }
}

final class PostgresTransaction: RecordTransaction {
    let database: PostgresRecords
    private(set) var writtenVersion: Int64 = 0
    private(set) var wroteRecords = false

    init(_ database: PostgresRecords) { self.database = database }

    func put(_ kind: String, _ key: String, _ value: Data) throws {
        wroteRecords = true
        let rows = try database.execute("""
            INSERT INTO records (kind, key, value, version) VALUES ($1, $2, $3, nextval('record_versions'))
            ON CONFLICT (kind, key) DO UPDATE SET value = EXCLUDED.value, version = EXCLUDED.version RETURNING version
            """, [.text(kind), .text(key), .bytes(value)])
        if rows.count > 0 { writtenVersion = max(writtenVersion, rows.integer(0, 0)) }
    }

    func delete(_ kind: String, _ key: String) throws {
        wroteRecords = true
        let rows = try database.execute("""
            UPDATE records SET value = NULL, version = nextval('record_versions')
            WHERE kind = $1 AND key = $2 AND value IS NOT NULL RETURNING version
            """, [.text(kind), .text(key)])
        if rows.count > 0 { writtenVersion = max(writtenVersion, rows.integer(0, 0)) }
    }

    func all(_ kind: String) throws -> [String: Data] {
        let rows = try database.execute("SELECT key, value FROM records WHERE kind = $1 AND value IS NOT NULL", [.text(kind)])
        var records: [String: Data] = [:]
        for row in 0..<rows.count { records[rows.text(row, 0)] = rows.data(row, 1) }
        return records
    }

    func keptReply(_ key: String) throws -> [UInt8]? {
        let rows = try database.execute("SELECT value FROM replies WHERE key = $1", [.text(key)])
        return rows.count > 0 ? [UInt8](rows.data(0, 0)) : nil
    }

    func keep(_ key: String, _ reply: [UInt8], capacity: Int) throws {
        _ = try database.execute(
            "INSERT INTO replies (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING", [.text(key), .bytes(Data(reply))])
        _ = try database.execute(
            "DELETE FROM replies WHERE sequence <= (SELECT max(sequence) FROM replies) - $1", [.integer(Int64(capacity))])
    }

    func changes(after version: Int64) throws -> (changes: [(kind: String, key: String, value: Data?)], version: Int64)? {
        let rows = try database.execute(
            "SELECT kind, key, value, version FROM records WHERE version > $1 ORDER BY version", [.integer(version)])
        var changes: [(kind: String, key: String, value: Data?)] = []
        var newest = version
        for row in 0..<rows.count {
            changes.append((rows.text(row, 0), rows.text(row, 1), rows.isNull(row, 2) ? nil : rows.data(row, 2)))
            newest = max(newest, rows.integer(row, 3))
        }
        return (changes, newest)
    }
}

struct PostgresError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
