import FlowKit
import FlowProtocol

/// The items the signed-in person liked (`appear`).
public final class LikesViewModel: ViewModel {
    override public class var screen: String { "likes" }


    public static let signedOut = "You are signed out. Sign in again to see your likes."

    let users: any UserService
    let movies: any MovieService

    public init(session: String, users: any UserService, movies: any MovieService) {
        self.users = users
        self.movies = movies
        super.init(session: session)
    }

    override public func handle(_ intent: IntentInput) throws(IntentRefusal) {
        guard intent.action == "appear" else { return try super.handle(intent) }
        load({ () throws(ServiceFailure) -> ScreenPayload in
            var data = ScreenData()
            data.items.items = try movies.resolvingSessions(with: users).likes(session: session)
            return .movies(data)
        }, message: { failure in
            switch failure {
            case .refused(.notSignedIn): Self.signedOut
            case .refused(let refusal): CommonMessages.unexpected(refusal)
            case .unavailable: CommonMessages.unavailable("movie service")
            }
        })
    }

    override public func presentation() -> Presentation {
        guard case .items(let list)? = screenData?.data else { return Presentation([.muted("Loading your likes…")]) }
        return Presentation([
            .collection("likes", title: "Liked", items: list.items.map(\.entry), action: "select", field: "item",
                        emptyText: "Nothing liked yet: open a movie or a series and choose Like."),
        ])
    }
}
