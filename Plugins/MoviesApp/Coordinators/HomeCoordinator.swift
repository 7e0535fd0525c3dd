import FlowKit
import FlowProtocol

/// The Home tab: Home → Details (push); Details of an actor → Details of a movie (push).
public final class HomeCoordinator: Coordinator {
    public override class var name: String { "home" }
    /// Selecting a carousel, cast or filmography entry: its id in the field `item`.
    static let select = ActionSpec("select", label: "Open", fields: ["item"])

    public override class var screenActions: [String: [ActionSpec]] { ["home": [select], "details": [select]] }

    public override func handle(intent: IntentInput) throws(IntentRefusal) {
        guard intent.action == "select" else { throw .unknownAction(intent.action, screen: Self.name, known: Self.actionNames) }
        navigate(.push(AppScreens.details(item: try Self.item(of: intent), owner: Self.name), tab: "home"))
    }

    /// The `item` field of a select intent, e.g. `movie:12`.
    static func item(of intent: IntentInput) throws(IntentRefusal) -> String {
        let item = intent.field("item")
        let parts = item.split(separator: ":")
        guard parts.count == 2, ["movie", "series", "actor", "episode"].contains(String(parts[0])) else {
            throw IntentRefusal(.invalidField, "select needs an item such as movie:12, got \"\(item)\"",
                                hint: "send the field item with the id of a carousel, cast or filmography entry")
        }
        return item
    }
}
