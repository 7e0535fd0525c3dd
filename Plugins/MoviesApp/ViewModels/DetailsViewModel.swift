import FlowKit
import FlowProtocol

/// One movie, series, episode or actor (the screen's `item` parameter): `appear` loads it,
/// `like` (a toggle) and `markWatched` change it and show it again. Over the bus each is one
/// `svc.movies` call naming the session; a movie service that cannot resolve sessions is asked
/// for the session's user through `users` first.
public final class DetailsViewModel: ViewModel {
    override public class var screen: String { "details" }
    override public class var actions: [ActionSpec] { [ActionSpec("like", label: "Like"), ActionSpec("markWatched", label: "Mark watched")] }

    public static let signedOut = "You are signed out. Sign in again to see the details."

    let users: any UserService
    let movies: any MovieService

    public init(session: String, users: any UserService, movies: any MovieService) {
        self.users = users
        self.movies = movies
        super.init(session: session)
    }

    override public func handle(_ intent: IntentInput) throws(IntentRefusal) {
        guard ["appear", "like", "markWatched"].contains(intent.action) else { return try super.handle(intent) }
        // The intent's screen says which item; two Details screens share this view model.
        let item = (intent.params["item"] ?? "").trimmingWhitespace
        guard !item.isEmpty else { throw Self.missingParameter("item", example: "movie:12") }
        let action = intent.action
        load({ () throws(ServiceFailure) -> ScreenPayload in
            let catalog = movies.resolvingSessions(with: users)
            var data = ScreenData()
            switch action {
            case "like": data.details = try catalog.like(id: item, session: session)
            case "markWatched": data.details = try catalog.markWatched(id: item, session: session)
            default: data.details = try catalog.details(id: item, session: session)
            }
            return .movies(data)
        }, message: { failure in
            switch failure {
            case .refused(.notSignedIn): Self.signedOut
            case .refused(.unknownItem): "\"\(item)\" is not in the catalog. Go back and choose another title."
            case .refused(let refusal): CommonMessages.unexpected(refusal)
            case .unavailable: CommonMessages.unavailable("movie service")
            }
        })
    }

    override public func presentation() -> Presentation {
        guard case .details(let details)? = screenData?.data else { return Presentation([.muted("Loading…")]) }
        var heading = details.item.title
        if details.year > 0 { heading += " (\(details.year))" }
        heading += " · \(details.item.kind)"
        var components: [PresentationComponent] = [.heading(heading)]
        if !details.genres.isEmpty { components.append(.muted(details.genres.joined(separator: ", "))) }
        if !details.synopsis.isEmpty { components.append(.text(details.synopsis)) }
        var buttons: [Flowbus_V1_ActionRef] = [.to("like", label: details.liked ? "♥ Liked" : "♡ Like")]
        if details.item.kind != "actor" { buttons.append(.to("markWatched", label: details.watched ? "✓ Watched" : "Mark watched")) }
        components.append(.buttons(buttons))
        if !details.cast.isEmpty {
            components.append(.collection("cast", title: "Cast", items: details.cast.map(\.entry), action: "select", field: "item"))
        }
        if !details.filmography.isEmpty {
            components.append(.collection("filmography", title: "Filmography", items: details.filmography.map(\.entry), action: "select", field: "item"))
        }
        if !details.episodes.isEmpty {
            components.append(.collection("episodes", title: "Episodes", items: details.episodes.map { episode in
                Flowbus_V1_Item(id: episode.id, title: episode.title, subtitle: "S\(episode.season) E\(episode.number)")
            }))
        }
        return Presentation(components)
    }
}
