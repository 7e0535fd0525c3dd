import FlowProtocol
import Foundation
import Synchronization

public final class InMemoryGenreService: GenreService, Sendable {
    let catalog: Catalog

    public init(catalog: Catalog) {
        self.catalog = catalog
    }

    public func genres() throws(ServiceFailure) -> [Movies_V1_Genre] { catalog.genreList }
}

/// Mail kept in per-address outboxes (`flowbus outbox EMAIL` reads them).
public final class InMemoryMailService: MailService, Sendable {
    let outboxes = Mutex<[String: [Mail]]>([:])

    public init() {}

    public func send(_ mail: Mail) throws(ServiceFailure) {
        outboxes.withLock { $0[InMemoryUserService.key(mail.to), default: []].append(mail) }
    }

    public func outbox(email: String) throws(ServiceFailure) -> [Mail] {
        outboxes.withLock { $0[InMemoryUserService.key(email)] ?? [] }
    }
}

public final class InMemoryExpenseService: ExpenseService, Sendable {
    let registered = Mutex<[String: [Movies_V1_ExpenseReport]]>([:])

    public init() {}

    public func submit(_ report: Movies_V1_ExpenseReport, session: String) throws(ServiceFailure) {
        guard report.totalCentavos > 0 else { throw .refused(.emptyReport) }
        registered.withLock { $0[session, default: []].append(report) }
    }

    public func reports(session: String) throws(ServiceFailure) -> [Movies_V1_ExpenseReport] {
        registered.withLock { $0[session] ?? [] }
    }
}
