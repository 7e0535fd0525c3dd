/// One e-mail the app sends. Nothing leaves the machine: mail is kept in per-address outboxes
/// (`flowbus call svc.mail outbox email=...` reads them).
public struct Mail: Sendable, Equatable, Codable {
    public var to: String
    public var subject: String
    public var body: String
    /// The 6-digit reset code a password reset mail carries (also in its body); nil for others.
    public var code: String?

    public init(to: String, subject: String, body: String, code: String? = nil) {
        self.to = to
        self.subject = subject
        self.body = body
        self.code = code
    }
}
