import FlowKit
import FlowProtocol

/// The root of every session: the Auth flow, or Main once the session is signed in.
/// Its process owns the session's navigation (FlowKit's navigation owner).
public final class AppCoordinator: Coordinator {
    public override class var name: String { "app" }

    var user: String {
        get { context["user"] ?? "" }
        set { context["user"] = newValue }
    }

    public override func start() {
        let flow = user.isEmpty ? "auth" : "main"
        context["flow"] = flow
        startChild(flow)
    }

    public override func handle(call method: String, args: [String: String]) throws(IntentRefusal) -> [String: String] {
        switch method {
        case "userDidSuccessfullyAuthenticate":
            guard context["flow"] != "main" else { return [:] }
            user = args["user"] ?? ""
            context["flow"] = "main"
            finishChild("auth")
            startChild("main")
        case "userDidLogOut":
            guard context["flow"] != "auth" else { return [:] }
            user = ""
            context["flow"] = "auth"
            finishChild("main")
            startChild("auth")
        default:
            return try super.handle(call: method, args: args)
        }
        return [:]
    }
}
