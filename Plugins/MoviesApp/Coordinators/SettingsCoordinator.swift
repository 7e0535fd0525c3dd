import FlowKit
import FlowProtocol

/// The Settings tab: pushes ChangePassword; Log out reports `userDidLogOut` (through Main to App).
public final class SettingsCoordinator: Coordinator {
    public override class var name: String { "settings" }
    public override class var watchedScreens: [String] { ["settings", "changepassword"] }
    public override class var screenActions: [String: [ActionSpec]] {
        ["settings": [ActionSpec("changePassword", label: "Change password")]]
    }

    public override func handle(intent: IntentInput) throws(IntentRefusal) {
        guard intent.action == "changePassword" else { throw .unknownAction(intent.action, screen: Self.name, known: Self.actionNames) }
        navigate(.push(AppScreens.changePassword(), tab: "settings"))
    }

    public override func screenChanged(_ change: ScreenChange) {
        guard case .success = change.state else { return }
        switch (change.screen, change.notice) {
        case ("changepassword", "passwordChanged"):
            navigate(.popTo("settings", tab: "settings"), .present(AppScreens.confirmation(change.noticeText, owner: Self.name)))
        case ("settings", "loggedOut"):
            report("userDidLogOut")
        default:
            break
        }
    }
}
