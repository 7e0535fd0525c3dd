import FlowKit
import FlowProtocol

/// The root of every session: the document's MainCoordinator, named `app` on the bus because
/// the navigation owner is always `coord.app`. Owns Authentication or Browse, never both:
/// `userDidSuccessfullyAuthenticate` finishes Authentication and starts Browse,
/// `userDidLogOut` finishes Browse and starts Authentication again.
public final class MainCoordinator: Coordinator {
    public override class var name: String { "app" }

    /// The signed-in account's e-mail ("" when signed out); the session record shows it.
    var user: String {
        get { context["user"] ?? "" }
        set { context["user"] = newValue }
    }

    public override func start() {
        // A session reopened after a restart of the host's record may already be signed in.
        let flow = user.isEmpty ? AuthenticationCoordinator.name : BrowseCoordinator.name
        context["flow"] = flow
        startChild(flow)
    }

    public override func handle(call method: String, args: [String: String]) throws(IntentRefusal) -> [String: String] {
        switch method {
        case "userDidSuccessfullyAuthenticate":
            // A repeated report (a retried call) changes nothing.
            guard context["flow"] != BrowseCoordinator.name else { return [:] }
            user = args["user"] ?? ""
            context["flow"] = BrowseCoordinator.name
            finishChild(AuthenticationCoordinator.name)
            startChild(BrowseCoordinator.name)
        case "userDidLogOut":
            guard context["flow"] != AuthenticationCoordinator.name else { return [:] }
            user = ""
            context["flow"] = AuthenticationCoordinator.name
            finishChild(BrowseCoordinator.name)
            startChild(AuthenticationCoordinator.name)
        default:
            return try super.handle(call: method, args: args)
        }
        return [:]
    }
}
