import FlowKit
import FlowProtocol

/// The five carousels of the signed-in person (`appear`).
public final class HomeViewModel: ViewModel {
    override public class var screen: String { "home" }
    override public class var actions: [String] { ["appear"] }

    public static let signedOut = "You are signed out. Sign in again to see your home."

    let users: any UserService
    let movies: any MovieService

    public init(session: String, users: any UserService, movies: any MovieService) {
        self.users = users
        self.movies = movies
        super.init(session: session)
    }

    override public func handle(_ intent: IntentInput) throws(IntentRefusal) {
        guard intent.action == "appear" else { return try super.handle(intent) }
        load({ () throws(ServiceFailure) -> ScreenData in
            let account = try users.account(forSession: session)
            var data = ScreenData()
            data.home = try movies.home(user: account.email)
            return data
        }, message: { failure in
            switch failure {
            case .refused(.notSignedIn): Self.signedOut
            case .refused(let refusal): CommonMessages.unexpected(refusal)
            case .unavailable: CommonMessages.unavailable("movie service")
            }
        })
    }
}
