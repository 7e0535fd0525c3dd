import AppStore
import Synchronization

/// Mail kept in per-address outboxes; nothing is sent anywhere. With a record store, each
/// address's outbox (an `outbox` record) is committed before `send` returns.
public final class InMemoryMailService: MailService, Sendable {
    let outboxes = Mutex<[String: [Mail]]>([:])
    let records: RecordStore?
    /// Mails kept per address, the oldest dropped first: each send rewrites the address's record,
    /// and a flood of reset requests must not grow it (or the memory) without end.
    public static let keptPerAddress = 50

    public init(records: RecordStore? = nil) {
        self.records = records
    }

    /// Follows the outboxes of the record store (none without one): loaded at start, and kept
    /// up with other replicas' writes.
    public func followRecords() {
        records?.follow("outbox", as: [Mail].self) { [weak self] address, outbox in
            self?.outboxes.withLock { $0[address] = outbox }
        }
    }

    public func send(_ mail: Mail) throws(ServiceFailure) {
        let address = emailKey(mail.to)
        try outboxes.withLock { outboxes throws(ServiceFailure) in
            let outbox = Array(((outboxes[address] ?? []) + [mail]).suffix(Self.keptPerAddress))
            try records.commit([.put("outbox", address, json: outbox)])
            outboxes[address] = outbox
        }
    }

    public func outbox(email: String) throws(ServiceFailure) -> [Mail] {
        outboxes.withLock { $0[emailKey(email)] ?? [] }
    }
}
