import AccountKit
import FlowKit
import FlowProtocol
import SwiftProtobuf

extension ScreenPayload {
    /// A `photos.v1` message with an optional notice.
    static func photos(_ message: some SwiftProtobuf.Message, notice code: String = "", _ text: String = "") -> ScreenPayload {
        ScreenPayload(message, notice: code.isEmpty ? nil : Notice(code, text))
    }

    /// Only a notice.
    static func notice(_ code: String, _ text: String) -> ScreenPayload {
        ScreenPayload(notice: Notice(code, text))
    }
}

extension ViewModel {
    /// `loading`, then `success` with what `body` returns, or `error` with `message(failure)`,
    /// about the form field `field(failure)` names, if any.
    func load(
        _ body: () throws(ServiceFailure) -> ScreenPayload, message: (ServiceFailure) -> String,
        field: (ServiceFailure) -> String? = { _ in nil }
    ) {
        state = .loading
        do {
            state = .success(try body())
        } catch {
            fail(message(error), field: field(error) ?? "")
        }
    }

    /// The e-mail of the account this session is signed in as.
    func signedInEmail(_ accounts: any AccountService) throws(ServiceFailure) -> String {
        try accounts.account(forSession: session).email
    }
}

/// Messages for failures every screen may meet.
enum PhotosMessages {
    static func unavailable(_ what: String) -> String {
        "The \(what) is not available right now. Try again in a moment."
    }

    static func unexpected(_ refusal: Refusal) -> String {
        "Something unexpected happened (\(refusal)). Try again; if it happens again, report it."
    }

    static func signedOut(to what: String) -> String {
        "You are logged out. Log in again to \(what)."
    }

    static func tooLong(_ field: String, limit: Int) -> String { AccountRules.tooLong(field, limit: limit) }
}

/// Field limits of the app's forms, checked by the view models and published to clients.
enum FieldLimits {
    static let email = AccountRules.maximumEmailLength
    static let password = AccountRules.maximumPasswordLength
    static let name = 80
}

extension Photos_V1_Photo {
    /// The photo as an entry of a list: title, author, likes.
    var entry: Flowbus_V1_Item {
        Flowbus_V1_Item(id: id, title: title, subtitle: author.name, detail: "♥ \(likes)")
    }
}
