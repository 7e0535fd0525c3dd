import FlowKit
import Foundation
import Synchronization

/// The services' replies by idempotency key, kept in the same file as the data they answer for,
/// so that a call retried after a kill -9 of the services is answered, not applied again.
extension RecordStore: ServiceReplyStore {
    public func reply(for key: String) throws -> [UInt8]? {
        guard !key.isEmpty else { return nil }
        return try read { transaction in try transaction.keptReply(key) }
    }

    public func remember(_ key: String, reply: [UInt8]) throws {
        guard !key.isEmpty else { return }
        try write { transaction in try transaction.keep(key, reply, capacity: replyCapacity) }
    }

    /// Answers one call in one transaction: the reply kept for `key`; else `handle()` runs
    /// inside the transaction — each put, delete and apply it makes on this store, from this
    /// thread, joins it — and its reply is written beside them. A kill -9 leaves the call's
    /// writes and its reply both or neither, so a retry is answered exactly when it was applied.
    ///
    /// In a shared store (PostgreSQL), the transaction first takes the store's lock, which every
    /// replica's writes take, and hands the followers what other replicas committed since: the
    /// handler sees every call answered before it, by any replica, and a retry reaching another
    /// replica finds the first reply.
    ///
    /// While a handler runs, the services wait on the store's one writer: every call passes here
    /// first, so locks are always taken writer first, then the services' own.
    ///
    /// If the commit itself fails, the handler may already have changed the services' memory:
    /// this throws, and the runtime stops the services so they load again from the store.
    public func answer(_ key: String, _ handle: () -> [UInt8]) throws -> [UInt8] {
        let followers = shared ? followers.withLock { $0 } : [:]
        var reached: Int64?
        let reply = try write { transaction in
            reached = try catchUp(transaction, followers: followers)
            if !key.isEmpty, let earlier = try transaction.keptReply(key) { return earlier }
            let open = OpenTransaction(store: ObjectIdentifier(self), transaction: transaction)
            let reply = OpenTransaction.$current.withValue(open) { handle() }
            if !key.isEmpty { try transaction.keep(key, reply, capacity: replyCapacity) }
            // Nothing else wrote since the catch-up (the lock is held): memory now holds this too.
            if let caughtUp = reached { reached = max(caughtUp, transaction.writtenVersion) }
            return reply
        }
        if let reached { advance(to: reached) }
        return reply
    }
}

/// The write transaction `RecordStore.answer` holds open while a handler runs. A task-local read
/// outside any task is thread-local, so only code on the thread running the handler sees it.
final class OpenTransaction: @unchecked Sendable {
    // Unchecked: it is bound and read only inside the write block that opened `transaction`,
    // on that block's thread, and never outlives the block.
    @TaskLocal static var current: OpenTransaction?

    let store: ObjectIdentifier
    let transaction: any RecordTransaction

    init(store: ObjectIdentifier, transaction: any RecordTransaction) {
        self.store = store
        self.transaction = transaction
    }
}
