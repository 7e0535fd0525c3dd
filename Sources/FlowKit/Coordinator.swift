import FlowProtocol

/// The base of every coordinator, one instance per session, as the source documents have it:
/// `start()`, the children it owns, the parent it reports to, and navigation.
///
/// A coordinator never waits for another process: `navigate`, `startChild`, `finishChild` and
/// `report` are recorded and carried out by the runtime once the current method returns, in
/// order. The parent is an address on the bus (`coord.<parent>`), the documents' weak
/// `parentCoordinator`.
open class Coordinator {
    /// The coordinator's name: its service is `coord.<name>`, its instance records `/c/<name>/<session>`.
    open class var name: String { fatalError("\(Self.self) must override `name`") }
    /// Screen kinds whose state changes `screenChanged` receives (the runtime follows `/v/<kind>/`).
    open class var watchedScreens: [String] { [] }
    /// The navigation actions `handle(intent:)` accepts, per kind of screen this coordinator
    /// owns (e.g. `["cart": ["checkout"]]`): declared once here, published
    /// in `Screen.actions` of every such screen it shows, and routed back to `coord.<name>`.
    open class var screenActions: [String: [ActionSpec]] { [:] }

    /// Every action name `handle(intent:)` accepts, for error messages.
    public static var actionNames: [String] {
        Array(Set(screenActions.values.flatMap { $0.map(\.name) })).sorted()
    }

    public let session: String
    /// The parent coordinator's name; empty for the root (app) coordinator.
    public internal(set) var parent: String
    /// The names of the live child coordinators this instance owns.
    public internal(set) var children: [String] = []
    /// What this instance must remember across a restart of its process (persisted in its record).
    public var context: [String: String] = [:]

    /// What a coordinator asked for, carried out by the runtime after the method returns.
    public enum Effect: Equatable {
        case navigate([NavigationOp])
        case startChild(String, [String: String])
        case finishChild(String)
        case call(coordinator: String, method: String, args: [String: String])
    }

    /// The effects recorded and not yet carried out (tests read them to check decisions).
    public internal(set) var effects: [Effect] = []

    public required init(session: String, parent: String) {
        self.session = session
        self.parent = parent
    }

    /// Called once when the parent starts this flow (not again after a restart of the process).
    open func start() {}

    /// Called when the parent releases this flow; the runtime finishes the children first.
    open func finish() {}

    /// A navigation action a person made on one of this coordinator's screens.
    open func handle(intent: IntentInput) throws(IntentRefusal) {
        throw .unknownAction(intent.action, screen: Self.name, known: Self.actionNames)
    }

    /// A call from another coordinator (a child reporting, e.g. `goToHome`). The returned
    /// values travel back in CoordinatorReply.result.
    open func handle(call method: String, args: [String: String]) throws(IntentRefusal) -> [String: String] {
        throw IntentRefusal(
            .invalidField, "the \(Self.name) coordinator has no method \"\(method)\"",
            hint: "check the coordinator calls in Protocols/README.md")
    }

    /// A watched screen's new state in this session (each version at most once, newest only).
    open func screenChanged(_ change: ScreenChange) {}

    // MARK: Effects

    /// Changes the session's navigation: the operations are applied together, in order.
    public func navigate(_ ops: NavigationOp...) {
        effects.append(.navigate(ops))
    }

    public func navigate(_ ops: [NavigationOp]) {
        effects.append(.navigate(ops))
    }

    /// Starts the child flow `name` for this session; this instance owns it until `finishChild`.
    public func startChild(_ name: String, args: [String: String] = [:]) {
        if !children.contains(name) { children.append(name) }
        effects.append(.startChild(name, args))
    }

    /// Releases the child flow `name` (and, through it, its own children).
    public func finishChild(_ name: String) {
        children.removeAll { $0 == name }
        effects.append(.finishChild(name))
    }

    /// Reports to the parent, e.g. `report("userDidSuccessfullyAuthenticate", args: ["user": email])`.
    public func report(_ method: String, args: [String: String] = [:]) {
        guard !parent.isEmpty else { return }
        effects.append(.call(coordinator: parent, method: method, args: args))
    }

    /// Calls a method of another coordinator that is not the parent (rarely needed).
    public func call(_ coordinator: String, _ method: String, args: [String: String] = [:]) {
        effects.append(.call(coordinator: coordinator, method: method, args: args))
    }
}
