import FlowKit
import FlowProtocol

/// The signed-in app: tabs Browse, Likes and Profile, each with its own stack. Selecting a photo
/// on Browse or Likes pushes Photo on that tab; logging out reports `userDidLogOut`.
///
/// The document presents Browse full screen over Welcome and, on log out, dismisses it and pops
/// Authentication to its root. A session's Navigation value has no tabs inside a modal, so here
/// the tabs become the root, and log out gives the root back to Authentication at Welcome.
public final class BrowseCoordinator: Coordinator {
    public override class var name: String { "browse" }
    public override class var watchedScreens: [String] { ["profile"] }

    /// Selecting a photo of a list: its id in the field `photo`.
    static let select = ActionSpec("select", label: "Open", fields: ["photo"])

    public override class var screenActions: [String: [ActionSpec]] { ["browse": [select], "likes": [select]] }

    public override func start() {
        navigate(.setRootTabs([
            ("browse", [PhotosScreens.browse()]),
            ("likes", [PhotosScreens.likes()]),
            ("profile", [PhotosScreens.profile()]),
        ], selected: "browse"))
    }

    public override func handle(intent: IntentInput) throws(IntentRefusal) {
        guard intent.action == "select" else { throw .unknownAction(intent.action, screen: Self.name, known: Self.actionNames) }
        let photo = try Self.photo(of: intent)
        // Each list is its tab's root screen, so the screen the photo was selected on names the tab.
        let tab = intent.screenID == "likes" ? "likes" : "browse"
        navigate(.push(PhotosScreens.photo(photo), tab: tab))
    }

    /// The `photo` field of a select intent, e.g. `photo:7`.
    static func photo(of intent: IntentInput) throws(IntentRefusal) -> String {
        let photo = intent.field("photo")
        let parts = photo.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0] == "photo", !parts[1].isEmpty, parts[1].allSatisfy(\.isNumber) else {
            throw IntentRefusal(.invalidField, "select needs a photo such as photo:7, got \"\(photo)\"",
                                hint: "send the field photo with the id of an entry of the list")
        }
        return photo
    }

    public override func screenChanged(_ change: ScreenChange) {
        guard case .success = change.state, change.screen == "profile", change.notice == "loggedOut" else { return }
        report("userDidLogOut")
    }
}
