import FlowKit
import FlowProtocol
import Foundation
import SwiftProtobuf

/// `GenreService` over the bus (`svc.genres`).
public final class BusGenreService: GenreService {
    let channel: ServiceChannel

    public init(transport: any ServiceTransport) {
        channel = ServiceChannel(transport: transport, service: AppServiceName.genres)
    }

    public func genres() throws(ServiceFailure) -> [Movies_V1_Genre] {
        try channel.call("genres", [:], as: Movies_V1_GenreList.self).genres
    }
}

/// `MovieService` over the bus (`svc.movies`). Calls naming a session instead of a user are
/// resolved by the services (`ServiceHandlers.movies(_:users:)`).
public final class BusMovieService: SessionMovieService {
    let channel: ServiceChannel

    public init(transport: any ServiceTransport) {
        channel = ServiceChannel(transport: transport, service: AppServiceName.movies)
    }

    public func home(user: String) throws(ServiceFailure) -> Movies_V1_HomeFeed {
        try channel.call("home", ["user": user], as: Movies_V1_HomeFeed.self)
    }

    public func details(id: String, user: String) throws(ServiceFailure) -> Movies_V1_Details {
        try channel.call("details", ["id": id, "user": user], as: Movies_V1_Details.self)
    }

    public func like(id: String, user: String) throws(ServiceFailure) -> Movies_V1_Details {
        try channel.call("like", ["id": id, "user": user], as: Movies_V1_Details.self)
    }

    public func markWatched(id: String, user: String) throws(ServiceFailure) -> Movies_V1_Details {
        try channel.call("markWatched", ["id": id, "user": user], as: Movies_V1_Details.self)
    }

    public func likes(user: String) throws(ServiceFailure) -> [Movies_V1_Item] {
        try channel.call("likes", ["user": user], as: Movies_V1_ItemList.self).items
    }

    public func home(session: String) throws(ServiceFailure) -> Movies_V1_HomeFeed {
        try channel.call("home", ["session": session], as: Movies_V1_HomeFeed.self)
    }

    public func likes(session: String) throws(ServiceFailure) -> [Movies_V1_Item] {
        try channel.call("likes", ["session": session], as: Movies_V1_ItemList.self).items
    }

    public func details(id: String, session: String) throws(ServiceFailure) -> Movies_V1_Details {
        try channel.call("details", ["id": id, "session": session], as: Movies_V1_Details.self)
    }

    public func like(id: String, session: String) throws(ServiceFailure) -> Movies_V1_Details {
        try channel.call("like", ["id": id, "session": session], as: Movies_V1_Details.self)
    }

    public func markWatched(id: String, session: String) throws(ServiceFailure) -> Movies_V1_Details {
        try channel.call("markWatched", ["id": id, "session": session], as: Movies_V1_Details.self)
    }
}

/// `MailService` over the bus (`svc.mail`).
public final class BusMailService: MailService {
    let channel: ServiceChannel

    public init(transport: any ServiceTransport) {
        channel = ServiceChannel(transport: transport, service: AppServiceName.mail)
    }

    public func send(_ mail: Mail) throws(ServiceFailure) {
        _ = try channel.call("send", ["to": mail.to, "subject": mail.subject, "body": mail.body])
    }

    public func outbox(email: String) throws(ServiceFailure) -> [Mail] {
        let result = try channel.call("outbox", ["email": email]).result
        let count = Int(result["count"] ?? "") ?? 0
        return (0..<count).map { index in
            Mail(to: result["mail.\(index).to"] ?? email, subject: result["mail.\(index).subject"] ?? "", body: result["mail.\(index).body"] ?? "")
        }
    }
}

/// `ExpenseService` over the bus (`svc.expenses`).
public final class BusExpenseService: ExpenseService {
    let channel: ServiceChannel

    public init(transport: any ServiceTransport) {
        channel = ServiceChannel(transport: transport, service: AppServiceName.expenses)
    }

    public func submit(_ report: Movies_V1_ExpenseReport, session: String) throws(ServiceFailure) {
        let bytes: Data
        do {
            bytes = try report.serializedData()
        } catch {
            throw .unavailable("could not serialize the expense report: \(error)")
        }
        _ = try channel.call("submit", ["report": bytes.base64EncodedString(), "session": session])
    }

    public func reports(session: String) throws(ServiceFailure) -> [Movies_V1_ExpenseReport] {
        let result = try channel.call("reports", ["session": session]).result
        let count = Int(result["count"] ?? "") ?? 0
        return try (0..<count).map { index throws(ServiceFailure) in
            guard let bytes = Data(base64Encoded: result["report.\(index)"] ?? ""),
                  let report = try? Movies_V1_ExpenseReport(serializedBytes: bytes) else {
                throw .unavailable("svc.expenses reports answered an unreadable report.\(index)")
            }
            return report
        }
    }
}
