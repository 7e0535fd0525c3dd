import FlowKit
import FlowProtocol

/// The photos the signed-in person likes, oldest like first (`appear`); selecting one sends the
/// Browse coordinator's `select` with the field `photo`, as on Browse.
public final class LikesViewModel: ViewModel {
    override public class var screen: String { "likes" }

    public static let emptyText = "No liked photos yet: open a photo in Browse and choose Like."

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
            list.photos = try photos.likes(user: try signedInEmail(accounts))
            return .photos(list)
        }, message: { failure in
            switch failure {
            case .refused(.notSignedIn): PhotosMessages.signedOut(to: "see your likes")
            case .refused(let refusal): PhotosMessages.unexpected(refusal)
            case .unavailable: PhotosMessages.unavailable("photo service")
            }
        })
    }

    override public func presentation() -> Presentation {
        guard let list = shown(Photos_V1_PhotoList.self) else {
            return Presentation([.muted(state == .loading ? "Loading your likes…" : "Your likes are not loaded: open this tab again.")])
        }
        return Presentation([
            .collection("likes", title: "Liked photos", items: list.photos.map(\.entry), action: "select", field: "photo",
                        emptyText: Self.emptyText),
        ])
    }
}
