import FlowKit
import FlowProtocol
import Foundation

/// One photo (the screen's `photo` parameter): `appear` loads it; `like` and `unlike` change it
/// and show it again. The one that does not apply now is disabled, with the reason.
public final class PhotoViewModel: ViewModel {
    override public class var screen: String { "photo" }
    override public class var actions: [ActionSpec] { [ActionSpec("like", label: "♡ Like"), ActionSpec("unlike", label: "Unlike")] }

    public static let alreadyLiked = "You already like this photo."
    public static let notLiked = "You have not liked this photo."
    public static let notLoaded = "The photo has not loaded yet."

    let accounts: any AccountService
    let photos: any PhotoService

    public init(session: String, accounts: any AccountService, photos: any PhotoService) {
        self.accounts = accounts
        self.photos = photos
        super.init(session: session)
    }

    var photo: Photos_V1_Photo? { shown(Photos_V1_Photo.self) }

    override public func handle(_ intent: IntentInput) throws(IntentRefusal) {
        let action = intent.action
        guard ["appear", "like", "unlike"].contains(action) else { return try super.handle(intent) }
        // The intent's screen says which photo: the Browse and Likes tabs share this view model.
        let id = (intent.params["photo"] ?? "").trimmingCharacters(in: .whitespaces)
        guard !id.isEmpty else {
            throw IntentRefusal(.invalidField, "the photo screen has no \"photo\" parameter",
                                hint: "open the photo screen with params photo=<id>, e.g. photo:7")
        }
        // An action the screen showed disabled (a client that sent it anyway) changes nothing.
        if action != "appear", photo?.id == id, let reason = disabledReason(for: action) { return state = .error(reason) }
        load({ () throws(ServiceFailure) -> ScreenPayload in
            let user = try signedInEmail(accounts)
            let shown: Photos_V1_Photo = switch action {
            case "like": try photos.like(id: id, user: user)
            case "unlike": try photos.unlike(id: id, user: user)
            default: try photos.photo(id: id, user: user)
            }
            return .photos(shown)
        }, message: { failure in
            switch failure {
            case .refused(.notSignedIn): PhotosMessages.signedOut(to: "see this photo")
            case .refused(.unknownPhoto): Refusal.unknownPhoto.message
            case .refused(let refusal): PhotosMessages.unexpected(refusal)
            case .unavailable: PhotosMessages.unavailable("photo service")
            }
        })
    }

    override public func disabledReason(for action: String) -> String? {
        guard let photo else { return Self.notLoaded }
        switch action {
        case "like": return photo.liked ? Self.alreadyLiked : nil
        case "unlike": return photo.liked ? nil : Self.notLiked
        default: return nil
        }
    }

    override public func presentation() -> Presentation {
        guard let photo else { return Presentation([.muted(state == .loading ? "Loading the photo…" : "The photo is not loaded.")]) }
        var components: [PresentationComponent] = [.heading(photo.title)]
        let byline = ["by \(photo.author.name)", photo.location].filter { !$0.isEmpty }.joined(separator: " · ")
        components.append(.muted(byline))
        if !photo.description_p.isEmpty { components.append(.text(photo.description_p)) }
        if !photo.tags.isEmpty { components.append(.muted(photo.tags.map { "#\($0)" }.joined(separator: " "))) }
        components.append(.summary("Likes", "♥ \(photo.likes)" + (photo.liked ? " · you like it" : "")))
        components.append(.buttons([.to("like", label: "♡ Like"), .to("unlike", label: "Unlike")]))
        components.append(.muted("\(photo.width)×\(photo.height) · \(photo.imageURL)"))
        return Presentation(components)
    }
}
