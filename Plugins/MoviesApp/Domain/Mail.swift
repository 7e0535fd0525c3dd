/// One e-mail the app sends (kept in an outbox: the demo sends nothing out).
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
