import FlowKit
import FlowProtocol

/// The feed (`appear`): every photo with its title, author and likes; selecting one sends the
/// Browse coordinator's `select` with the field `photo`.
public final class BrowseViewModel: ViewModel {
    override public class var screen: String { "browse" }

    let accounts: any AccountService
    let photos: any PhotoService

    public init(session: String, accounts: any AccountService, photos: any PhotoService) {
        self.accounts = accounts
        self.photos = photos
        super.init(session: session)
    }

    override public func handle(_ intent: IntentInput) throws(IntentRefusal) {
        guard intent.action == "appear" else { return try super.handle(intent) }
        load({ () throws(ServiceFailure) -> ScreenPayload in
            var list = Photos_V1_PhotoList()
            list.photos = try photos.feed(user: try signedInEmail(accounts))
            return .photos(list)
        }, message: { failure in
            switch failure {
            case .refused(.notSignedIn): PhotosMessages.signedOut(to: "browse the photos")
            case .refused(let refusal): PhotosMessages.unexpected(refusal)
            case .unavailable: PhotosMessages.unavailable("photo service")
            }
        })
    }

    override public func presentation() -> Presentation {
        guard let list = shown(Photos_V1_PhotoList.self) else {
            return Presentation([.muted(state == .loading ? "Loading the photos…" : "The photos are not loaded: open this tab again.")])
        }
        return Presentation([
            .collection("photos", title: "Photos", items: list.photos.map(\.entry), action: "select", field: "photo",
                        emptyText: "No photos to show yet."),
        ])
    }
}
