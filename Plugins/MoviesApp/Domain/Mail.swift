/// One e-mail the app sends (kept in an outbox: the demo sends nothing out).
public struct Mail: Sendable, Equatable, Codable {
    public var to: String
    public var subject: String
    public var body: String

    public init(to: String, subject: String, body: String) {
        self.to = to
        self.subject = subject
        self.body = body
    }
}

extension Mail {
    /// The 6-digit code the mail carries (a verification token): the first run of exactly six
    /// ASCII digits in the subject, else in the body; nil when there is none.
    public var token: String? { Self.sixDigits(in: subject) ?? Self.sixDigits(in: body) }

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
