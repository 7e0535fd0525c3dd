import Foundation

/// How the services compare e-mail addresses: without surrounding spaces and without regard to
/// case, so `Ana@Example.com ` and `ana@example.com` are one account, one outbox, one set of likes.
func emailKey(_ email: String) -> String {
    email.trimmingCharacters(in: .whitespaces).lowercased()
}
