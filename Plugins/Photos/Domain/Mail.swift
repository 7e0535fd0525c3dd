/// One e-mail the app sends. Nothing leaves the machine: mail is kept in per-address outboxes
/// (`flowbus call svc.mail outbox email=...` reads them).
public struct Mail: Sendable, Equatable {
    public var to: String
    public var subject: String
    public var body: String

    public init(to: String, subject: String, body: String) {
        self.to = to
        self.subject = subject
        self.body = body
    }
}
