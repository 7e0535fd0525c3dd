import FlowKit
import FlowProtocol

/// The Settings tab: pushes ChangePassword; Log out reports `userDidLogOut` (through Main to App).
public final class SettingsCoordinator: Coordinator {
    public override class var name: String { "settings" }
    public override class var watchedScreens: [String] { ["settings", "changepassword"] }
    public override class var actions: [String] { ["changePassword"] }

    public override func handle(intent: IntentInput) throws(IntentRefusal) {
        guard intent.action == "changePassword" else { throw .unknownAction(intent.action, screen: Self.name, known: Self.actions) }
        navigate(.push(AppScreens.changePassword(), tab: "settings"))
    }

    public override func screenChanged(_ screen: String, state: ViewModelState, data: Flowbus_V1_ScreenData?, screenID: String) {
        guard case .success(let data) = state else { return }
        switch (screen, data.notice.code) {
        case ("changepassword", "passwordChanged"):
            navigate(.popTo("settings", tab: "settings"), .present(AppScreens.confirmation(data.notice.text, owner: Self.name)))
        case ("settings", "loggedOut"):
            report("userDidLogOut")
        default:
            break
        }
    }
}
