import FlowKit
import FlowProtocol

public typealias ScreenData = Flowbus_V1_ScreenData

extension Flowbus_V1_ScreenData {
    init(account: Account, notice code: String = "", _ text: String = "") {
        self.init()
        self.account = account
        if !code.isEmpty { notice = .init(code, text) }
    }

    init(notice code: String, _ text: String) {
        self.init()
        notice = .init(code, text)
    }
}

extension Flowbus_V1_Notice {
    init(_ code: String, _ text: String) {
        self.init()
        self.code = code
        self.text = text
    }
}

extension ViewModel {
    /// `loading`, then `success` with what `body` returns, or `error` with `message(failure)`.
    func load(_ body: () throws(ServiceFailure) -> ScreenData, message: (ServiceFailure) -> String) {
        state = .loading
        do {
            state = .success(try body())
        } catch {
            state = .error(message(error))
        }
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
}
