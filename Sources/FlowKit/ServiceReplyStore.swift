import Synchronization

/// Where a services process keeps the replies it sent, by idempotency key, so that a retried
/// call (same key) gets the first reply again instead of being applied twice
/// (`ServiceWorkerRuntime.serve(_:bus:replies:until:)`).
///
/// The default, `InMemoryServiceReplies`, forgets everything when the process dies: a retry
/// that reaches the restarted process is applied again. A store that outlives the process
/// (the app's database) keeps that promise across a kill -9 too.
public protocol ServiceReplyStore: AnyObject, Sendable {
    /// The reply (an encoded reply envelope) remembered for `key`, or nil.
    func reply(for key: String) throws -> [UInt8]?

    /// Remembers `reply` for `key`. The first reply for a key stays: remembering another for
    /// the same key changes nothing. An empty key is never remembered.
    func remember(_ key: String, reply: [UInt8]) throws

    /// Answers one call: the reply remembered for `key`, else `handle()`'s reply, remembered
    /// (an empty key: `handle()` every time, nothing remembered). A store that also holds the
    /// app's data overrides it to commit what the handler wrote and its reply at once.
    ///
    /// A store that throws has not answered: the runtime answers UNAVAILABLE and stops the
    /// services, so that their supervisor restarts them from what the store holds.
    func answer(_ key: String, _ handle: () -> [UInt8]) throws -> [UInt8]
}

extension ServiceReplyStore {
    public func answer(_ key: String, _ handle: () -> [UInt8]) throws -> [UInt8] {
        guard !key.isEmpty else { return handle() }
        if let earlier = try reply(for: key) { return earlier }
        let reply = handle()
        try remember(key, reply: reply)
        return reply
    }
}

/// The replies to the newest `capacity` calls, in memory: a retry reaching the same process is
/// answered, one reaching a restarted process is applied again.
public final class InMemoryServiceReplies: ServiceReplyStore {
    /// How many replies are kept by default: each service's last 4096 calls.
    public static let defaultCapacity = 4096

    public let capacity: Int
    private let replies: Mutex<RecentOutcomes<[UInt8]>>

    public init(capacity: Int = InMemoryServiceReplies.defaultCapacity) {
        self.capacity = max(1, capacity)
        self.replies = Mutex(RecentOutcomes(capacity: self.capacity))
    }

    public func reply(for key: String) -> [UInt8]? {
        replies.withLock { $0[key] }
    }

    public func remember(_ key: String, reply: [UInt8]) {
        replies.withLock { $0.remember(reply, for: key) }
    }
}
