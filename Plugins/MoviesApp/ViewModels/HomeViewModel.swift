import FlowKit
import FlowProtocol

/// The five carousels of the signed-in person (`appear`).
public final class HomeViewModel: ViewModel {
    override public class var screen: String { "home" }


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
        load({ () throws(ServiceFailure) -> ScreenPayload in
            var data = ScreenData()
            data.home = try movies.resolvingSessions(with: users).home(session: session)
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
        guard case .home(let feed)? = screenData?.data else { return Presentation([.muted("Loading your home…")]) }
        return Presentation(feed.carousels.map { carousel in
            .collection(carousel.id, title: carousel.title, style: .carousel, items: carousel.items.map(\.entry),
                        action: "select", field: "item", emptyText: "\(carousel.title): nothing yet")
        })
    }
}
