import AccountKit
import FlowKit
import FlowProtocol

/// Changes the password (`change`): the current one, then a new one with sign-up's rules.
/// Success: notice "passwordChanged".
public final class ChangePasswordViewModel: ViewModel {
    override public class var screen: String { "changepassword" }
    override public class var actions: [ActionSpec] {
        [ActionSpec("change", label: "Change password", fields: ["current", "password", "passwordConfirmation"])]
    }

    public static let currentRequired = "Enter your current password."
    public static let wrongCurrent = "The current password is not right. Type it again."

    let users: any UserService

    public init(session: String, users: any UserService) {
        self.users = users
        super.init(session: session)
    }

    override public func handle(_ intent: IntentInput) throws(IntentRefusal) {
        guard intent.action == "change" else { return try super.handle(intent) }
        let current = intent.rawField("current")
        let password = intent.rawField("password")
        if current.isEmpty { return fail(Self.currentRequired, field: "current") }
        if current.count > FieldLimits.password { return fail(Self.wrongCurrent, field: "current") }
        if let fault = AccountRules.newPasswordFault(password, confirmation: intent.rawField("passwordConfirmation")) {
            return fail(fault.message, field: fault.field == .password ? "password" : "passwordConfirmation")
        }
        load({ () throws(ServiceFailure) -> ScreenPayload in
            try users.changePassword(session: session, current: current, new: password)
            return .notice("passwordChanged", "Your password was changed.")
        }, message: { failure in
            switch failure {
            case .refused(.wrongPassword): Self.wrongCurrent
            case .refused(.notSignedIn): "You are signed out. Sign in again to change your password."
            case .refused(.tooManyAttempts): CommonMessages.tooManyAttempts
            case .refused(let refusal): CommonMessages.unexpected(refusal)
            case .unavailable: CommonMessages.unavailable("account service")
            }
        }, field: { $0 == .refused(.wrongPassword) ? "current" : nil })
    }

    override public func presentation() -> Presentation {
        Presentation([
            .field("current", label: "Current", kind: .secret, maxLength: FieldLimits.password),
            .field("password", label: "New", kind: .secret, maxLength: FieldLimits.password),
            .field("passwordConfirmation", label: "Confirm", kind: .secret, maxLength: FieldLimits.password),
            .buttons("change"),
        ])
    }
}
