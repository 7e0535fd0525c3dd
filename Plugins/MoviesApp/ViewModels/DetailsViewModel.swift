import FlowKit
import FlowProtocol

/// One movie, series, episode or actor (the screen's `item` parameter): `appear` loads it,
/// `like` (a toggle) and `markWatched` change it and show it again.
public final class DetailsViewModel: ViewModel {
    override public class var screen: String { "details" }
    override public class var actions: [String] { ["appear", "like", "markWatched"] }

    public static let signedOut = "You are signed out. Sign in again to see the details."

    let users: any UserService
    let movies: any MovieService

    public init(session: String, users: any UserService, movies: any MovieService) {
        self.users = users
        self.movies = movies
        super.init(session: session)
    }

    override public func handle(_ intent: IntentInput) throws(IntentRefusal) {
        guard Self.actions.contains(intent.action) else { return try super.handle(intent) }
        // The intent's screen says which item; two Details screens share this view model.
        let item = (intent.params["item"] ?? "").trimmingWhitespace
        guard !item.isEmpty else { throw Self.missingParameter("item", example: "movie:12") }
        let action = intent.action
        load({ () throws(ServiceFailure) -> ScreenData in
            let user = try users.account(forSession: session).email
            var data = ScreenData()
            switch action {
            case "like": data.details = try movies.like(id: item, user: user)
            case "markWatched": data.details = try movies.markWatched(id: item, user: user)
            default: data.details = try movies.details(id: item, user: user)
            }
            return data
        }, message: { failure in
            switch failure {
            case .refused(.notSignedIn): Self.signedOut
            case .refused(.unknownItem): "\"\(item)\" is not in the catalog. Go back and choose another title."
            case .refused(let refusal): CommonMessages.unexpected(refusal)
            case .unavailable: CommonMessages.unavailable("movie service")
            }
        })
    }
}
