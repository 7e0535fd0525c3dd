import FlowKit
import FlowProtocol

/// The signed-in app: tabs Home, Likes, Settings, Expenses, each with its own stack; owns the
/// Home, Settings and Expenses flows and the Likes tab itself.
public final class MainCoordinator: Coordinator {
    public override class var name: String { "main" }
    public override class var screenActions: [String: [ActionSpec]] {
        ["likes": [HomeCoordinator.select], "details": [HomeCoordinator.select]]
    }

    public override func start() {
        // The flows first: effects run in order, each call answered before the next, so no tab
        // shows a screen before the flow that acts on it is live (a select on Home was refused).
        startChild("home")
        startChild("settings")
        startChild("expenses")
        navigate(.setRootTabs([
            ("home", [AppScreens.home()]),
            ("likes", [AppScreens.likes()]),
            ("settings", [AppScreens.settings()]),
            ("expenses", [AppScreens.expenses()]),
        ], selected: "home"))
    }

    public override func handle(intent: IntentInput) throws(IntentRefusal) {
        guard intent.action == "select" else { throw .unknownAction(intent.action, screen: Self.name, known: Self.actionNames) }
        navigate(.push(AppScreens.details(item: try HomeCoordinator.item(of: intent), owner: Self.name), tab: "likes"))
    }

    public override func handle(call method: String, args: [String: String]) throws(IntentRefusal) -> [String: String] {
        guard method == "userDidLogOut" else { return try super.handle(call: method, args: args) }
        report("userDidLogOut")
        return [:]
    }
}
