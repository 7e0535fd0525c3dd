/// The account form rules shared by sign-in, sign-up, forgot-password and change-password,
/// each with the message a person reads when it fails.
public enum AccountRules {
    public static let minimumPasswordLength = 8

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
        if !isWellFormedEmail(email) { return "\"\(email)\" is not a valid e-mail address. Type one like name@example.com." }
        return nil
    }

    /// The message for the first new-password rule broken, nil when both fields are fine.
    public static func newPasswordProblem(_ password: String, confirmation: String) -> String? {
        if password.isEmpty { return "Enter a password." }
        if password.count < minimumPasswordLength {
            return "The password is too short: use at least \(minimumPasswordLength) characters."
        }
        if confirmation.isEmpty { return "Type the password again to confirm it." }
        if confirmation != password { return "The confirmation does not match the password. Type the same password twice." }
        return nil
    }
}
