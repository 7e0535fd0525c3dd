import FlowKit
import FlowProtocol

/// The signed-in account (`appear`: name and e-mail) and logging out (`logOut`, notice "loggedOut").
public final class ProfileViewModel: ViewModel {
    override public class var screen: String { "profile" }
    override public class var actions: [ActionSpec] { [ActionSpec("logOut", label: "Log out")] }

    let accounts: any AccountService

    public init(session: String, accounts: any AccountService) {
        self.accounts = accounts
        super.init(session: session)
    }

    var account: Photos_V1_Account? { shown(Photos_V1_Account.self) }

    override public func handle(_ intent: IntentInput) throws(IntentRefusal) {
        switch intent.action {
        case "appear":
            load({ () throws(ServiceFailure) -> ScreenPayload in
                .photos(try accounts.account(forSession: session))
            }, message: Self.message)
        case "logOut":
            let shownAccount = account
            load({ () throws(ServiceFailure) -> ScreenPayload in
                try accounts.signOut(session: session)
                // The account stays in the payload: the screen still says whose profile it was.
                return .photos(shownAccount ?? Photos_V1_Account(), notice: "loggedOut", "You are logged out.")
            }, message: Self.message)
        default:
            try super.handle(intent)
        }
    }

    static func message(_ failure: ServiceFailure) -> String {
        switch failure {
        case .refused(.notSignedIn): PhotosMessages.signedOut(to: "see your profile")
        case .refused(let refusal): PhotosMessages.unexpected(refusal)
        case .unavailable: PhotosMessages.unavailable("account service")
        }
    }

    override public func presentation() -> Presentation {
        var components: [PresentationComponent] = []
        if let account, !account.email.isEmpty {
            components.append(.heading(account.name))
            components.append(.text(account.email))
        } else {
            components.append(.muted(state == .loading ? "Loading your profile…" : "Your profile is not loaded: open this tab again."))
        }
        components.append(.buttons("logOut"))
        return Presentation(components)
    }
}
