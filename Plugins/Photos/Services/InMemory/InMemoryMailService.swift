import Synchronization

/// Mail kept in per-address outboxes; nothing is sent anywhere.
public final class InMemoryMailService: MailService, Sendable {
    let outboxes = Mutex<[String: [Mail]]>([:])

    public init() {}

    public func send(_ mail: Mail) throws(ServiceFailure) {
        outboxes.withLock { $0[emailKey(mail.to), default: []].append(mail) }
    }

    public func outbox(email: String) throws(ServiceFailure) -> [Mail] {
        outboxes.withLock { $0[emailKey(email)] ?? [] }
    }
}
