import Foundation
import Synchronization

/// The sample apps' durable records: (kind, key) → value, written before a service answers, so
/// a reply the app sent is never lost to a kill -9 of the services or the host. The services
/// keep their working set in memory: each follows the kinds it owns (`follow`), `load` hands
/// them every record when they start, and — when replicas share the store — each call first
/// hands them what the other replicas wrote since (`answer`).
///
/// Two backends: SQLite through GRDB (a file in the run directory; one services process), and
/// PostgreSQL through libpq (`postgresql://…`; any number of replicas, on any machines).
///
/// It also keeps the services' replies by idempotency key (`RecordStore+Replies.swift`).
public final class RecordStore: Sendable {
    let backend: any RecordBackend
    /// Where the records live: a file's path, `:memory:`, or a PostgreSQL address (no password).
    public let path: String
    /// How many replies are kept: the newest; older ones are pruned as new ones come.
    public let replyCapacity: Int
    /// Replies kept unless told otherwise: as many as the in-memory default keeps per service.
    public static let defaultReplyCapacity = 4096
    /// Whether other processes write the same records (PostgreSQL), so calls catch up first.
    public let shared: Bool

    let followers = Mutex<[String: @Sendable (String, Data?) throws -> Void]>([:])
    /// The replies of calls that wrote nothing, kept in memory only (`answer`), newest last.
    let unwrittenReplies = Mutex(RecentReplies())
    /// The newest version this process's memory holds (shared stores).
    let seen = Atomic<Int64>(0)

    /// Opens (or creates) the SQLite database at `path`, making its folder owner-only if missing.
    public convenience init(path: String, replyCapacity: Int = RecordStore.defaultReplyCapacity) throws(RecordStoreError) {
        let backend: SQLiteRecords
        do { backend = try SQLiteRecords(path: path) } catch { throw RecordStoreError(path: path, reason: "\(error)") }
        self.init(backend: backend, shared: false, replyCapacity: replyCapacity)
    }

    /// Connects to the PostgreSQL database at `address` (`postgresql://user@host:port/database`,
    /// or `postgresql:///database?host=/socket/folder`) and keeps the records in `schema`
    /// (created if missing), which every replica of the same app names alike.
    public convenience init(postgres address: String, schema: String, replyCapacity: Int = RecordStore.defaultReplyCapacity) throws(RecordStoreError) {
        let backend: PostgresRecords
        do { backend = try PostgresRecords(address: address, schema: schema) } catch {
            throw RecordStoreError(path: PostgresRecords.redacted(address), reason: "\(error)")
        }
        self.init(backend: backend, shared: true, replyCapacity: replyCapacity)
    }

    /// A store in memory: the same code paths, nothing on disk (unit tests).
    public convenience init(replyCapacity: Int = RecordStore.defaultReplyCapacity) throws(RecordStoreError) {
        let backend: SQLiteRecords
        do { backend = try SQLiteRecords() } catch { throw RecordStoreError(path: ":memory:", reason: "\(error)") }
        self.init(backend: backend, shared: false, replyCapacity: replyCapacity)
    }

    init(backend: any RecordBackend, shared: Bool, replyCapacity: Int) {
        self.backend = backend
        self.shared = shared
        self.replyCapacity = max(1, replyCapacity)
        path = backend.location
    }

    /// Whether `data` names a PostgreSQL database rather than a file.
    public static func isPostgresAddress(_ data: String) -> Bool { PostgresRecords.isAddress(data) }

    /// Writes (or replaces) one record; returns once it is committed.
    public func put(_ kind: String, _ key: String, _ value: Data) throws(RecordStoreError) {
        try write { transaction in try transaction.put(kind, key, value) }
    }

    /// Writes one record as JSON.
    public func put(_ kind: String, _ key: String, json value: some Encodable) throws(RecordStoreError) {
        let data: Data
        do { data = try JSONEncoder().encode(value) } catch { throw RecordStoreError(path: path, reason: "cannot encode \(kind)/\(key): \(error)") }
        try put(kind, key, data)
    }

    public func delete(_ kind: String, _ key: String) throws(RecordStoreError) {
        try write { transaction in try transaction.delete(kind, key) }
    }

    /// Applies `changes` in one transaction: after a kill -9 the store holds all of them or none.
    public func apply(_ changes: [RecordChange]) throws(RecordStoreError) {
        try write { transaction in
            for change in changes {
                switch change {
                case .put(let kind, let key, let value): try transaction.put(kind, key, value)
                case .delete(let kind, let key): try transaction.delete(kind, key)
                }
            }
        }
    }

    /// Every record of `kind`, by key.
    public func all(_ kind: String) throws(RecordStoreError) -> [String: Data] {
        do {
            return try read { transaction in try transaction.all(kind) }
        } catch {
            throw RecordStoreError(path: path, reason: "\(error)")
        }
    }

    /// Every record of `kind`, decoded from JSON; a record that does not decode is an error
    /// (a damaged file is reported, never silently dropped).
    public func all<Value: Decodable>(_ kind: String, as type: Value.Type) throws(RecordStoreError) -> [String: Value] {
        var values: [String: Value] = [:]
        for (key, data) in try all(kind) {
            values[key] = try decode(kind, key, data, as: Value.self)
        }
        return values
    }

    func decode<Value: Decodable>(_ kind: String, _ key: String, _ data: Data, as type: Value.Type) throws(RecordStoreError) -> Value {
        do { return try JSONDecoder().decode(Value.self, from: data) } catch {
            throw RecordStoreError(path: path, reason: "the \(kind) record \(key) does not decode: \(error)")
        }
    }

    /// Hands every record of `kind` to `apply` — each one by `load`, then, in a shared store,
    /// each one another replica writes or deletes (nil) before the call that follows. `apply`
    /// sets or removes the key in the service's memory; it runs inside the store's write
    /// transaction, before the handler, so it may take the service's own locks.
    public func follow(_ kind: String, _ apply: @escaping @Sendable (_ key: String, _ value: Data?) throws -> Void) {
        followers.withLock { $0[kind] = apply }
    }

    /// `follow` with each value decoded from JSON; a value that does not decode stops the load
    /// (or the call) with an error naming the record.
    public func follow<Value: Decodable & SendableMetatype>(
        _ kind: String, as type: Value.Type, _ apply: @escaping @Sendable (_ key: String, _ value: Value?) -> Void
    ) {
        follow(kind) { [unowned self] key, data throws(RecordStoreError) in
            apply(key, try data.map { data throws(RecordStoreError) in try self.decode(kind, key, data, as: Value.self) })
        }
    }

    /// Hands every record to the kinds' followers, as the services start.
    public func load() throws(RecordStoreError) {
        let followers = followers.withLock { $0 }
        do {
            if shared {
                if let version = try backend.write({ transaction in try catchUp(transaction, followers: followers) }) {
                    advance(to: version)
                }
            } else {
                for (kind, apply) in followers.sorted(by: { $0.key < $1.key }) {
                    for (key, value) in try all(kind) { try apply(key, value) }
                }
            }
        } catch let error as RecordStoreError {
            throw error
        } catch {
            throw RecordStoreError(path: path, reason: "\(error)")
        }
    }

    /// Hands the followers what was committed since this process last looked (other replicas'
    /// writes, and its own, which set what memory already holds); returns the version reached,
    /// nil for a store this process alone writes.
    func catchUp(_ transaction: any RecordTransaction, followers: [String: @Sendable (String, Data?) throws -> Void]) throws -> Int64? {
        guard let (changes, version) = try transaction.changes(after: seen.load(ordering: .acquiring)) else { return nil }
        for change in changes { try followers[change.kind]?(change.key, change.value) }
        return version
    }

    /// Records that memory holds every version up to `version` (once its transaction committed).
    func advance(to version: Int64) {
        var current = seen.load(ordering: .relaxed)
        while current < version {
            let (exchanged, original) = seen.compareExchange(expected: current, desired: version, ordering: .acquiringAndReleasing)
            if exchanged { return }
            current = original
        }
    }

    /// Runs `body` in a write transaction: the one `answer` holds open on this thread for this
    /// store, if any (its writes then commit with the reply), else a transaction of its own.
    func write<T>(_ body: (any RecordTransaction) throws -> T) throws(RecordStoreError) -> T {
        do {
            if let open = OpenTransaction.current, open.store == ObjectIdentifier(self) { return try body(open.transaction) }
            return try backend.write(body)
        } catch let error as RecordStoreError {
            throw error
        } catch {
            throw RecordStoreError(path: path, reason: "\(error)")
        }
    }

    /// Reads through the open transaction, if any (it sees its own writes), else what is committed.
    func read<T>(_ body: (any RecordTransaction) throws -> T) throws -> T {
        if let open = OpenTransaction.current, open.store == ObjectIdentifier(self) { return try body(open.transaction) }
        return try backend.read(body)
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
