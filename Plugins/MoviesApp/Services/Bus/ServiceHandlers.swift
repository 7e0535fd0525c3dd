import FlowKit
import FlowProtocol
import Foundation
import SwiftProtobuf

/// The server side of the app's services on the bus (`svc.users`, `svc.genres`, `svc.movies`,
/// `svc.mail`, `svc.expenses`): each maps a `ServiceCall` (method + args) to a service and its
/// result back to a `ServiceReply` (payload + payload_kind, or result values, or refusal).
public enum ServiceHandlers {
    public static let userMethods = ["register", "verify", "resendToken", "signIn", "account", "signOut", "changePassword", "requestPasswordReset", "resetPassword"]
    public static let movieMethods = ["home", "details", "like", "markWatched", "likes"]

    public static func users(_ users: any UserService) -> ServiceHandler {
        { call in
            ServiceReply.answering { () throws(ServiceFailure) -> ServiceReply in
                switch call.method {
                case "register":
                    let genres = call.arg("genres").split(separator: ",").map(String.init)
                    return try .payload(users.register(Registration(
                        name: call.arg("name"), nickname: call.arg("nickname"), email: call.arg("email"),
                        password: call.arg("password"), genres: genres)))
                case "verify":
                    return try .payload(users.verify(email: call.arg("email"), token: call.arg("token"), session: call.arg("session")))
                case "resendToken":
                    try users.resendToken(email: call.arg("email"))
                    return .empty
                case "signIn":
                    return try .payload(users.signIn(email: call.arg("email"), password: call.arg("password"), session: call.arg("session")))
                case "account":
                    return try .payload(users.account(forSession: call.arg("session")))
                case "signOut":
                    try users.signOut(session: call.arg("session"))
                    return .empty
                case "changePassword":
                    try users.changePassword(session: call.arg("session"), current: call.arg("current"), new: call.arg("new"))
                    return .empty
                case "requestPasswordReset":
                    try users.requestPasswordReset(email: call.arg("email"))
                    return .empty
                case "resetPassword":
                    try users.resetPassword(email: call.arg("email"), code: call.arg("code"), newPassword: call.arg("newPassword"))
                    return .empty
                default:
                    return .unknownMethod(call.method, service: AppServiceName.users, known: userMethods)
                }
            }
        }
    }

    public static func genres(_ genres: any GenreService) -> ServiceHandler {
        { call in
            ServiceReply.answering { () throws(ServiceFailure) -> ServiceReply in
                guard call.method == "genres" else { return .unknownMethod(call.method, service: AppServiceName.genres, known: ["genres"]) }
                var list = Movies_V1_GenreList()
                list.genres = try genres.genres()
                return .payload(list)
            }
        }
    }

    /// `svc.movies`. A call may name a `session` instead of a `user`: the user signed in on it,
    /// as `users` knows it (refused `notSignedIn` when no one is, or when there is no `users`).
    public static func movies(_ movies: any MovieService, users: (any UserService)? = nil) -> ServiceHandler {
        { call in
            ServiceReply.answering { () throws(ServiceFailure) -> ServiceReply in
                let id = call.arg("id")
                var user = call.arg("user")
                if user.isEmpty, let session = call.args["session"] {
                    guard let users else { throw .refused(.notSignedIn) }
                    user = try users.account(forSession: session).email
                }
                switch call.method {
                case "home": return try .payload(movies.home(user: user))
                case "details": return try .payload(movies.details(id: id, user: user))
                case "like": return try .payload(movies.like(id: id, user: user))
                case "markWatched": return try .payload(movies.markWatched(id: id, user: user))
                case "likes":
                    var list = Movies_V1_ItemList()
                    list.items = try movies.likes(user: user)
                    return .payload(list)
                default: return .unknownMethod(call.method, service: AppServiceName.movies, known: movieMethods)
                }
            }
        }
    }

    /// `outbox` answers in result values: `count`, then `mail.<i>.to`, `.subject`, `.body` (and
    /// `.token` for a mail with a code), newest last; `token` is the newest code.
    public static func mail(_ mail: any MailService) -> ServiceHandler {
        { call in
            ServiceReply.answering { () throws(ServiceFailure) -> ServiceReply in
                switch call.method {
                case "send":
                    try mail.send(Mail(to: call.arg("to"), subject: call.arg("subject"), body: call.arg("body")))
                    return .empty
                case "outbox":
                    let mails = try mail.outbox(email: call.arg("email"))
                    var values = ["count": String(mails.count)]
                    for (index, mail) in mails.enumerated() {
                        values["mail.\(index).to"] = mail.to
                        values["mail.\(index).subject"] = mail.subject
                        values["mail.\(index).body"] = mail.body
                        if let token = mail.token { values["mail.\(index).token"] = token }
                    }
                    // The newest code, so a script can wait for it by one name.
                    if let token = mails.reversed().lazy.compactMap(\.token).first { values["token"] = token }
                    return .result(values)
                default: return .unknownMethod(call.method, service: AppServiceName.mail, known: ["send", "outbox"])
                }
            }
        }
    }

    /// `submit` takes `report` (a base64 serialized ExpenseReport) and `session`; `reports`
    /// answers `count` and `report.<i>` (base64) values, oldest first.
    public static func expenses(_ expenses: any ExpenseService) -> ServiceHandler {
        { call in
            ServiceReply.answering { () throws(ServiceFailure) -> ServiceReply in
                switch call.method {
                case "submit":
                    guard let bytes = Data(base64Encoded: call.arg("report")),
                          let report = try? Movies_V1_ExpenseReport(serializedBytes: bytes) else {
                        var reply = ServiceReply()
                        reply.error = Flowbus_V1_Error(
                            .invalidField, "svc.expenses submit got no readable report",
                            hint: "pass args.report: a base64-encoded serialized flowbus.v1.ExpenseReport")
                        return reply
                    }
                    try expenses.submit(report, session: call.arg("session"))
                    return .empty
                case "reports":
                    let reports = try expenses.reports(session: call.arg("session"))
                    var values = ["count": String(reports.count)]
                    for (index, report) in reports.enumerated() {
                        values["report.\(index)"] = ((try? report.serializedData()) ?? Data()).base64EncodedString()
                    }
                    return .result(values)
                default: return .unknownMethod(call.method, service: AppServiceName.expenses, known: ["submit", "reports"])
                }
            }
        }
    }
}
