import FlowKit
import FlowProtocol

/// The Choose a new password form both apps show after Forgot password: the mailed code, a new
/// password and its confirmation; `setPassword` sets it, `resend` mails a new code.
public enum ResetPasswordForm {
    public static let actions = [
        ActionSpec("setPassword", label: "Set new password", fields: ["code", "password", "passwordConfirmation"]),
        ActionSpec("resend", label: "Send a new code"),
    ]

    /// The notice code of a success that set the password (its coordinator goes back to log in).
    public static let changedNotice = "passwordReset"
    public static let changed = "Your password is changed. Log in with the new one."

    /// The first rule the form breaks, in the order of its fields: the field and what to say.
    public static func problem(code: String, password: String, confirmation: String, email: String) -> (field: String, message: String)? {
        if code.isEmpty { return ("code", "Enter the 6-digit code we mailed to \(email).") }
        guard code.count == 6, code.allSatisfy({ ("0"..."9").contains($0) }) else {
            return ("code", "The code has 6 digits. Check the mail we sent to \(email) and type it again.")
        }
        if let fault = AccountRules.newPasswordFault(password, confirmation: confirmation) {
            return (fault.field == .password ? "password" : "passwordConfirmation", fault.message)
        }
        return nil
    }

    /// The form's inputs and buttons.
    public static var inputs: [PresentationComponent] {
        [
            .field("code", label: "Code", kind: .number, maxLength: 6),
            .field("password", label: "New", kind: .secret, maxLength: AccountRules.maximumPasswordLength),
            .field("passwordConfirmation", label: "Confirm", kind: .secret, maxLength: AccountRules.maximumPasswordLength),
            .buttons("setPassword", "resend"),
        ]
    }

    /// What the screen says first.
    public static func instructions(email: String) -> String {
        "Type the 6-digit code we mailed to \(email), then your new password."
    }

    /// The notice of a code mailed again.
    public static func resent(to email: String) -> String {
        "We mailed a new code to \(email), if it has an account. The codes sent before it no longer work."
    }
}
