import FlowKit
import FlowProtocol

/// The signed-in account (`appear`) and signing out (`logOut`, notice "loggedOut").
public final class SettingsViewModel: ViewModel {
    override public class var screen: String { "settings" }
    override public class var actions: [ActionSpec] { [ActionSpec("logOut", label: "Log out")] }

    public static let signedOut = "You are signed out. Sign in again to see your settings."

    let users: any UserService
    /// Names the account's genres (it stores their ids); without it, or while it is down, the ids show.
    let genres: (any GenreService)?
    var genreNames: [String: String] = [:]

    public init(session: String, users: any UserService, genres: (any GenreService)? = nil) {
        self.users = users
        self.genres = genres
        super.init(session: session)
    }

    override public func handle(_ intent: IntentInput) throws(IntentRefusal) {
        switch intent.action {
        case "appear":
            load({ () throws(ServiceFailure) -> ScreenPayload in
                let account = try users.account(forSession: session)
                if !account.genres.isEmpty, genreNames.isEmpty, let list = try? genres?.genres() {
                    genreNames = Dictionary(list.map { ($0.id, $0.name) }) { first, _ in first }
                }
                return .account(account)
            }, message: Self.message)
        case "logOut":
            load({ () throws(ServiceFailure) -> ScreenPayload in
                try users.signOut(session: session)
                return .notice("loggedOut", "You are signed out.")
            }, message: Self.message)
        default:
            try super.handle(intent)
        }
    }

    static func message(_ failure: ServiceFailure) -> String {
        switch failure {
        case .refused(.notSignedIn): signedOut
        case .refused(let refusal): CommonMessages.unexpected(refusal)
        case .unavailable: CommonMessages.unavailable("account service")
        }
    }

    override public func presentation() -> Presentation {
        var components: [PresentationComponent] = []
        if case .account(let account)? = screenData?.data {
            components.append(.heading("\(account.name) (\(account.nickname))"))
            components.append(.text(account.email))
            if !account.genres.isEmpty {
                components.append(.muted("Genres: " + account.genres.map { genreNames[$0] ?? $0 }.joined(separator: ", ")))
            }
        }
        components.append(.buttons("changePassword", "logOut"))
        return Presentation(components)
    }
}
