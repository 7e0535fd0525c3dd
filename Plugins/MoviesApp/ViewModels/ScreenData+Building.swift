import AccountKit
import FlowKit
import FlowProtocol

public typealias ScreenData = Movies_V1_ScreenData

extension ScreenPayload {
    /// The movies app's payload, with an optional notice.
    static func movies(_ data: ScreenData, notice code: String = "", _ text: String = "") -> ScreenPayload {
        ScreenPayload(data, notice: code.isEmpty ? nil : Notice(code, text))
    }

    /// An account, with an optional notice.
    static func account(_ account: Account, notice code: String = "", _ text: String = "") -> ScreenPayload {
        var data = ScreenData()
        data.account = account
        return .movies(data, notice: code, text)
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

    /// The movies payload last shown, if any.
    var screenData: ScreenData? { shown(ScreenData.self) }

    /// The screen's `email` parameter, or "your e-mail" when it has none.
    var mailedAddress: String { screenParams["email"].flatMap { $0.isEmpty ? nil : $0 } ?? "your e-mail" }

    /// A screen where a mailed code is typed: what was sent, where the demo's mail is read, the
    /// inputs and buttons, and the notice `code` once it succeeded (a code sent again).
    func mailedCodePresentation(_ sent: String, inputs: [PresentationComponent], showing code: String) -> Presentation {
        var components: [PresentationComponent] = [
            .text(sent),
            .muted("No real mail here: `flowbus call svc.mail outbox email=\(mailedAddress)` prints it."),
        ] + inputs
        if case .success(let shown) = state, shown.notice?.code == code, let text = shown.notice?.text {
            components.append(.notice(text))
        }
        return Presentation(components)
    }

    /// A refusal for an intent made on a screen that lacks a parameter it needs.
    static func missingParameter(_ name: String, example: String) -> IntentRefusal {
        IntentRefusal(
            .invalidField, "the \(screen) screen has no \"\(name)\" parameter",
            hint: "open \(screen) with params \(name)=<value>, e.g. \(example)")
    }
}

/// Messages for failures every screen may meet.
enum CommonMessages {
    static func unavailable(_ what: String) -> String {
        "The \(what) is not available right now. Try again in a moment."
    }

    static func unexpected(_ refusal: Refusal) -> String {
        "Something unexpected happened (\(refusal)). Try again; if it happens again, report it."
    }

    static let signedOut = "You are signed out. Sign in again to continue."

    static let tooManyAttempts = "Too many wrong tries for this account. Wait a few minutes, then try again."
}

/// Field limits of the app's forms, checked by the view models and published to clients.
enum FieldLimits {
    static let email = AccountRules.maximumEmailLength
    static let password = AccountRules.maximumPasswordLength
    static let name = 80
    static let token = 6
    static let titulo = 80
    static let valor = 20
}

extension Movies_V1_Item {
    /// The entry of a presentation's collection.
    var entry: Flowbus_V1_Item { Flowbus_V1_Item(id: id, title: title, subtitle: subtitle) }
}
