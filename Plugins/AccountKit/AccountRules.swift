/// The account form rules shared by sign-in, sign-up, forgot-password and change-password,
/// each with the message a person reads when it fails.
public enum AccountRules {
    public static let minimumPasswordLength = 8
    /// The most characters of an e-mail address (RFC 5321's path limit).
    public static let maximumEmailLength = 254

    /// A plain shape check: one `@`, a non-empty name before it, a dotted domain after it, no spaces.
    public static func isWellFormedEmail(_ email: String) -> Bool {
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !email.contains(where: \.isWhitespace) else { return false }
        let labels = parts[1].split(separator: ".", omittingEmptySubsequences: false)
        return labels.count >= 2 && labels.allSatisfy { !$0.isEmpty }
    }

    /// The message for the first e-mail rule `email` breaks, nil when it is fine.
    public static func emailProblem(_ email: String) -> String? {
        if email.isEmpty { return "Enter your e-mail address." }
        if email.count > maximumEmailLength { return tooLong("e-mail address", limit: maximumEmailLength) }
        if !isWellFormedEmail(email) { return "\"\(email)\" is not a valid e-mail address. Type one like name@example.com." }
        return nil
    }

    /// What a person reads when a field holds more than its limit: the value is refused, not cut.
    public static func tooLong(_ field: String, limit: Int) -> String {
        "The \(field) is too long: use at most \(limit) characters."
    }

    /// The most characters of a password (a longer one is refused, not cut).
    public static let maximumPasswordLength = 128

    /// Which of a new password's two fields a problem is about.
    public enum PasswordField: Sendable, Equatable {
        case password, confirmation
    }

    /// The message for the first new-password rule broken, nil when both fields are fine.
    public static func newPasswordProblem(_ password: String, confirmation: String) -> String? {
        newPasswordFault(password, confirmation: confirmation)?.message
    }

    /// The first new-password rule broken, with the field it is about; nil when both are fine.
    public static func newPasswordFault(_ password: String, confirmation: String) -> (field: PasswordField, message: String)? {
        if password.isEmpty { return (.password, "Enter a password.") }
        if password.count < minimumPasswordLength {
            return (.password, "The password is too short: use at least \(minimumPasswordLength) characters.")
        }
        if password.count > maximumPasswordLength {
            return (.password, tooLong("password", limit: maximumPasswordLength))
        }
        if confirmation.isEmpty { return (.confirmation, "Type the password again to confirm it.") }
        if confirmation != password { return (.confirmation, "The confirmation does not match the password. Type the same password twice.") }
        return nil
    }
}
