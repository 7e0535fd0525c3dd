import FlowProtocol
import Foundation

/// One mail of the demo's outbox (`svc.mail` method "outbox").
public struct OutboxMail: Sendable, Equatable, Codable {
    public var to: String
    public var subject: String
    public var body: String
    /// The 6-digit verification token: `mail.<i>.token` when the service sends it, else the first
    /// run of exactly six digits in the subject or body; nil when there is none.
    public var token: String?
}

/// Reads the outbox contract of /work/briefs/issue3.md ("svc.mail outbox"): args `email`; reply
/// `result["count"]` and, for each mail i from 0 (oldest first), `mail.<i>.to`, `.subject`, `.body`
/// and optionally `.token`.
public enum MailOutbox {
    public static let service = "svc.mail"

    public static func read(email: String, via connection: BusConnection) async throws(SessionClientError) -> [OutboxMail] {
        let reply = try await connection.serviceCall(service, method: "outbox", args: ["email": email])
        return try mails(in: reply)
    }

    /// The mails of an outbox reply.
    public static func mails(in reply: Flowbus_V1_ServiceReply) throws(SessionClientError) -> [OutboxMail] {
        guard let countText = reply.result["count"], let count = Int(countText), count >= 0 else {
            throw .unexpectedReply(service: service, kind: "outbox reply without a \"count\" result")
        }
        return (0..<count).map { index in
            let field = { (name: String) in reply.result["mail.\(index).\(name)"] ?? "" }
            let token = reply.result["mail.\(index).token"].flatMap { $0.isEmpty ? nil : $0 }
                ?? sixDigits(in: field("subject")) ?? sixDigits(in: field("body"))
            return OutboxMail(to: field("to"), subject: field("subject"), body: field("body"), token: token)
        }
    }

    /// The newest token in the mails, if any.
    public static func lastToken(in mails: [OutboxMail]) -> String? {
        mails.reversed().lazy.compactMap(\.token).first
    }

    /// The first run of exactly six ASCII digits.
    static func sixDigits(in text: String) -> String? {
        var run = ""
        for character in text + " " {
            if character.isASCII, character.isNumber {
                run.append(character)
                continue
            }
            if run.count == 6 { return run }
            run = ""
        }
        return nil
    }
}
