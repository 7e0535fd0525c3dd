import FlowKit
import Foundation
import GRDB

/// The services' replies by idempotency key, kept in the same file as the data they answer for,
/// so that a call retried after a kill -9 of the services is answered, not applied again.
extension RecordStore: ServiceReplyStore {
    public func reply(for key: String) throws -> [UInt8]? {
        guard !key.isEmpty else { return nil }
        return try read { db in try Self.keptReply(db, key) }
    }

    public func remember(_ key: String, reply: [UInt8]) throws {
        guard !key.isEmpty else { return }
        try write { db in try Self.keep(db, key, reply, capacity: replyCapacity) }
    }

    /// Answers one call in one SQLite transaction: the reply kept for `key`; else `handle()`
    /// runs inside the transaction — each put, delete and apply it makes on this store, from
    /// this thread, joins it — and its reply is written beside them. A kill -9 leaves the call's
    /// writes and its reply both or neither, so a retry is answered exactly when it was applied.
    ///
    /// While a handler runs, the services wait on SQLite's one writer: every call passes here
    /// first, so locks are always taken writer first, then the services' own.
    ///
    /// If the commit itself fails, the handler may already have changed the services' memory:
    /// this throws, and the runtime stops the services so they load again from the file.
    public func answer(_ key: String, _ handle: () -> [UInt8]) throws -> [UInt8] {
        try write { db in
            if !key.isEmpty, let earlier = try Self.keptReply(db, key) { return earlier }
            let reply = OpenTransaction.$current.withValue(OpenTransaction(store: ObjectIdentifier(self), database: db)) { handle() }
            if !key.isEmpty { try Self.keep(db, key, reply, capacity: replyCapacity) }
            return reply
        }
    }

    static func keptReply(_ db: Database, _ key: String) throws -> [UInt8]? {
        try Data.fetchOne(db, sql: "SELECT value FROM replies WHERE key = ?", arguments: [key]).map { [UInt8]($0) }
    }

    /// Keeps the first reply for `key` and prunes all but the newest `capacity`.
    static func keep(_ db: Database, _ key: String, _ reply: [UInt8], capacity: Int) throws {
        try db.execute(sql: "INSERT OR IGNORE INTO replies (key, value) VALUES (?, ?)", arguments: [key, Data(reply)])
        try db.execute(sql: "DELETE FROM replies WHERE sequence <= (SELECT MAX(sequence) FROM replies) - ?", arguments: [capacity])
    }
}

/// The write transaction `RecordStore.answer` holds open while a handler runs. A task-local read
/// outside any task is thread-local, so only code on the thread running the handler sees it.
final class OpenTransaction: @unchecked Sendable {
    // Unchecked: it is bound and read only inside the GRDB write block that opened `database`,
    // on that block's thread, and never outlives the block.
    @TaskLocal static var current: OpenTransaction?

    let store: ObjectIdentifier
    let database: Database

    init(store: ObjectIdentifier, database: Database) {
        self.store = store
        self.database = database
    }
}
