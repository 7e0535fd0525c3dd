import FlowKit
import Foundation
import Synchronization

/// The services' replies by idempotency key, kept in the same file as the data they answer for,
/// so that a call retried after a kill -9 of the services is answered, not applied again.
extension RecordStore: ServiceReplyStore {
    public func reply(for key: String) throws -> [UInt8]? {
        guard !key.isEmpty else { return nil }
        if let kept = unwrittenReplies.withLock({ $0.reply(for: key) }) { return kept }
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
    /// A call that wrote nothing (a read, a refusal: most calls) keeps its reply in this
    /// process's memory, not in the store, which would cost a disk write each: a duplicate or a
    /// retry reaching this process is answered from memory; after a kill -9, or at another
    /// replica, it runs again, as what it did in memory was lost with the process anyway.
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
        if !key.isEmpty, let kept = unwrittenReplies.withLock({ $0.reply(for: key) }) { return kept }
        let followers = shared ? followers.withLock { $0 } : [:]
        var reached: Int64?
        let reply = try write { transaction in
            reached = try catchUp(transaction, followers: followers)
            if !key.isEmpty, let earlier = try transaction.keptReply(key) { return earlier }
            let open = OpenTransaction(store: ObjectIdentifier(self), transaction: transaction)
            let reply = OpenTransaction.$current.withValue(open) { handle() }
            if !key.isEmpty {
                if transaction.wroteRecords {
                    try transaction.keep(key, reply, capacity: replyCapacity)
                } else {
                    unwrittenReplies.withLock { $0.keep(key, reply, capacity: replyCapacity) }
                }
            }
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

/// Replies kept in memory by key, the newest `capacity`.
struct RecentReplies: ~Copyable {
    private var replies: [String: [UInt8]] = [:]
    private var order: [String] = []
    private var head = 0

    func reply(for key: String) -> [UInt8]? { replies[key] }

    /// Keeps the first reply for `key`, forgetting the oldest beyond `capacity`.
    mutating func keep(_ key: String, _ reply: [UInt8], capacity: Int) {
        guard replies[key] == nil else { return }
        replies[key] = reply
        order.append(key)
        if order.count - head > capacity {
            replies[order[head]] = nil
            head += 1
            // Drop the forgotten keys once they are half the array.
            if head * 2 >= order.count {
                order.removeFirst(head)
                head = 0
            }
        }
    }
}
