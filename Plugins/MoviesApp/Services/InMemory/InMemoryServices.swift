import AppStore
import FlowProtocol
import Foundation
import Synchronization
import SwiftProtobuf

public final class InMemoryGenreService: GenreService, Sendable {
    let catalog: Catalog

    public init(catalog: Catalog) {
        self.catalog = catalog
    }

    public func genres() throws(ServiceFailure) -> [Movies_V1_Genre] { catalog.genreList }
}

/// Mail kept in per-address outboxes (`flowbus outbox EMAIL` reads them); with a record store,
/// each outbox (`outbox` records) is committed before `send` returns.
public final class InMemoryMailService: MailService, Sendable {
    let outboxes = Mutex<[String: [Mail]]>([:])
    let records: RecordStore?
    /// Mails kept per address (the oldest go first).
    static let keptPerAddress = 50

    public init(records: RecordStore? = nil) {
        self.records = records
    }

    /// Follows the `outbox` records: loaded at start, and kept up with other replicas' writes.
    public func followRecords() {
        records?.follow("outbox", as: [Mail].self) { [weak self] address, outbox in
            self?.outboxes.withLock { $0[address] = outbox }
        }
    }

    public func send(_ mail: Mail) throws(ServiceFailure) {
        try outboxes.withLock { outboxes throws(ServiceFailure) in
            let address = InMemoryUserService.key(mail.to)
            let outbox = Array(((outboxes[address] ?? []) + [mail]).suffix(Self.keptPerAddress))
            try records.commit("outbox", address, json: outbox)
            outboxes[address] = outbox
        }
    }

    public func outbox(email: String) throws(ServiceFailure) -> [Mail] {
        outboxes.withLock { $0[InMemoryUserService.key(email)] ?? [] }
    }
}

/// Expense reports per session; with a record store, each session's reports (`expenses`
/// records, serialized reports) are committed before `submit` returns.
public final class InMemoryExpenseService: ExpenseService, Sendable {
    let registered = Mutex<[String: [Movies_V1_ExpenseReport]]>([:])
    let records: RecordStore?

    public init(records: RecordStore? = nil) {
        self.records = records
    }

    /// Follows the `expenses` records: loaded at start, and kept up with other replicas' writes.
    public func followRecords() {
        guard let records else { return }
        records.follow("expenses") { [weak self, path = records.path] session, value throws(RecordStoreError) in
            guard let self else { return }
            guard let value else { return registered.withLock { $0[session] = nil } }
            let reports: [Movies_V1_ExpenseReport]
            do {
                reports = try JSONDecoder().decode([Data].self, from: value).map { try Movies_V1_ExpenseReport(serializedBytes: $0) }
            } catch {
                throw RecordStoreError(path: path, reason: "the expenses record \(session) does not decode: \(error)")
            }
            registered.withLock { $0[session] = reports }
        }
    }

    public func submit(_ report: Movies_V1_ExpenseReport, session: String) throws(ServiceFailure) {
        guard report.totalCentavos > 0 else { throw .refused(.emptyReport) }
        try registered.withLock { registered throws(ServiceFailure) in
            let reports = (registered[session] ?? []) + [report]
            let blobs: [Data]
            do { blobs = try reports.map { try $0.serializedBytes() } } catch { throw .unavailable("an expense report does not serialize: \(error)") }
            try records.commit("expenses", session, json: blobs)
            registered[session] = reports
        }
    }

    public func reports(session: String) throws(ServiceFailure) -> [Movies_V1_ExpenseReport] {
        registered.withLock { $0[session] ?? [] }
    }
}
