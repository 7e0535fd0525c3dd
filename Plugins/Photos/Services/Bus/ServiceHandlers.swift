import FlowKit
import FlowProtocol

/// The server side of the app's services on the bus (`svc.accounts`, `svc.photos`, `svc.mail`):
/// each maps a `ServiceCall` (method + args) to a service and its result back to a
/// `ServiceReply` (payload + payload_kind, or result values, or refusal). An unknown method or
/// a missing argument is answered with an `invalidField` error that says how to call it.
public enum ServiceHandlers {
    static let accountMethods = [
        ServiceMethod("register", required: ["name", "email", "password"], optional: ["session"]),
        ServiceMethod("signIn", required: ["email", "password", "session"]),
        ServiceMethod("account", required: ["session"]),
        ServiceMethod("signOut", required: ["session"]),
        ServiceMethod("requestPasswordReset", required: ["email"]),
        ServiceMethod("resetPassword", required: ["email", "code", "newPassword"]),
    ]
    static let photoMethods = [
        ServiceMethod("feed", optional: ["user"]),
        ServiceMethod("photo", required: ["id"], optional: ["user"]),
        ServiceMethod("like", required: ["id", "user"]),
        ServiceMethod("unlike", required: ["id", "user"]),
        ServiceMethod("likes", required: ["user"]),
    ]
    static let mailMethods = [
        ServiceMethod("send", required: ["to", "subject"], optional: ["body"]),
        ServiceMethod("outbox", required: ["email"]),
    ]

    public static func accounts(_ accounts: any AccountService) -> ServiceHandler {
        { call in
            .serving(call, of: PhotosServiceName.accounts, methods: accountMethods) { () throws(ServiceFailure) -> Flowbus_V1_ServiceReply in
                switch call.method {
                case "register":
                    return try .payload(accounts.register(
                        name: call.arg("name"), email: call.arg("email"), password: call.arg("password"), session: call.arg("session")))
                case "signIn":
                    return try .payload(accounts.signIn(email: call.arg("email"), password: call.arg("password"), session: call.arg("session")))
                case "account":
                    return try .payload(accounts.account(forSession: call.arg("session")))
                case "signOut":
                    try accounts.signOut(session: call.arg("session"))
                    return .result([:])
                case "requestPasswordReset":
                    try accounts.requestPasswordReset(email: call.arg("email"))
                    return .result([:])
                case "resetPassword":
                    try accounts.resetPassword(email: call.arg("email"), code: call.arg("code"), newPassword: call.arg("newPassword"))
                    return .result([:])
                default:
                    return .unhandled(call.method, of: PhotosServiceName.accounts)
                }
            }
        }
    }

    public static func photos(_ photos: any PhotoService) -> ServiceHandler {
        { call in
            .serving(call, of: PhotosServiceName.photos, methods: photoMethods) { () throws(ServiceFailure) -> Flowbus_V1_ServiceReply in
                let id = call.arg("id")
                let user = call.arg("user")
                switch call.method {
                case "feed": return try .payload(list(photos.feed(user: user)))
                case "photo": return try .payload(photos.photo(id: id, user: user))
                case "like": return try .payload(photos.like(id: id, user: user))
                case "unlike": return try .payload(photos.unlike(id: id, user: user))
                case "likes": return try .payload(list(photos.likes(user: user)))
                default: return .unhandled(call.method, of: PhotosServiceName.photos)
                }
            }
        }
    }

    /// `outbox` answers in result values, as the movies app's svc.mail does: `count`, then
    /// `mail.<i>.to`, `.subject`, `.body` (and `.code` for a reset mail), newest last; `code` is
    /// the newest reset code, so a script can save it (`save: {code: code}`).
    public static func mail(_ mail: any MailService) -> ServiceHandler {
        { call in
            .serving(call, of: PhotosServiceName.mail, methods: mailMethods) { () throws(ServiceFailure) -> Flowbus_V1_ServiceReply in
                switch call.method {
                case "send":
                    try mail.send(Mail(to: call.arg("to"), subject: call.arg("subject"), body: call.arg("body")))
                    return .result([:])
                case "outbox":
                    let mails = try mail.outbox(email: call.arg("email"))
                    var values = ["count": String(mails.count)]
                    for (index, mail) in mails.enumerated() {
                        values["mail.\(index).to"] = mail.to
                        values["mail.\(index).subject"] = mail.subject
                        values["mail.\(index).body"] = mail.body
                        if let code = mail.code { values["mail.\(index).code"] = code }
                    }
                    if let code = mails.reversed().lazy.compactMap(\.code).first { values["code"] = code }
                    return .result(values)
                default:
                    return .unhandled(call.method, of: PhotosServiceName.mail)
                }
            }
        }
    }

    static func list(_ photos: [Photos_V1_Photo]) -> Photos_V1_PhotoList {
        var list = Photos_V1_PhotoList()
        list.photos = photos
        return list
    }
}
