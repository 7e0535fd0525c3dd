import FlowKit
import FlowProtocol

/// The Photos app's screens as navigation values: kind, owner coordinator, title, parameters.
public enum PhotosScreens {
    public static let tabs = ["browse", "likes", "profile"]

    /// The Authentication flow's root. It has no view model: it carries its own presentation, and
    /// its buttons are the Authentication coordinator's actions on it.
    public static func welcome() -> Screen {
        .make("welcome", owner: AuthenticationCoordinator.name, title: "Welcome", viewModel: false, presentation: Presentation(title: "Welcome to Photos", [
            .text("Beautiful photos from photographers around the world, free to browse and like."),
            .buttons("logIn", "createAccount", "forgotPassword"),
        ]))
    }

    public static func logIn() -> Screen { .make("login", owner: AuthenticationCoordinator.name, title: "Log in") }
    public static func createAccount() -> Screen { .make("createaccount", owner: AuthenticationCoordinator.name, title: "Create account") }
    public static func forgotPassword() -> Screen { .make("forgotpassword", owner: AuthenticationCoordinator.name, title: "Forgot password") }
    public static func resetPassword(email: String) -> Screen {
        .make("resetpassword", owner: AuthenticationCoordinator.name, title: "Choose a new password", params: ["email": email])
    }

    public static func browse() -> Screen { .make("browse", owner: BrowseCoordinator.name, title: "Browse") }
    public static func likes() -> Screen { .make("likes", owner: BrowseCoordinator.name, title: "Likes") }
    public static func profile() -> Screen { .make("profile", owner: BrowseCoordinator.name, title: "Profile") }

    /// A Photo screen of `photo` (e.g. `photo:7`); its id comes from the photo's (`photo-7`), so
    /// selecting the same photo twice (a retried or duplicated intent) pushes it once.
    public static func photo(_ photo: String) -> Screen {
        let id = String(photo.map { $0.isLetter || $0.isNumber ? $0 : "-" })
        return .make("photo", id: id, owner: BrowseCoordinator.name, title: "Photo", params: ["photo": photo])
    }

    /// A confirmation shown as a modal, with no view model: it carries its own presentation; OK
    /// (the session's action) dismisses it.
    public static func confirmation(_ text: String, owner: String) -> Screen {
        .make("confirmation", owner: owner, title: "Done", params: ["text": text], viewModel: false,
              presentation: Presentation([.text(text), .buttons("ok")]))
    }
}
