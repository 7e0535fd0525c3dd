import FlowProtocol

public typealias Navigation = Flowbus_V1_Navigation
public typealias NavigationOp = Flowbus_V1_NavigationOp
public typealias Screen = Flowbus_V1_Screen

extension Flowbus_V1_Screen {
    /// A screen of `kind` owned by `owner`; `id` defaults to the kind (screens shown once per
    /// session). A screen served by a view model (`vm.<kind>`) says so; one without (a
    /// confirmation) carries its own `presentation`.
    public static func make(
        _ kind: String, id: String? = nil, owner: String, title: String = "", params: [String: String] = [:],
        viewModel: Bool = true, presentation: Presentation? = nil
    ) -> Screen {
        var screen = Screen()
        screen.kind = kind
        screen.id = id ?? kind
        screen.owner = owner
        screen.title = title
        screen.params = params
        if viewModel { screen.viewModel = "vm.\(kind)" }
        if let presentation { screen.presentation = presentation }
        return screen
    }
}

extension Flowbus_V1_NavigationOp {
    public static func setRoot(_ screens: [Screen]) -> NavigationOp {
        var op = NavigationOp()
        op.kind = .setRootStack
        op.screens = screens
        return op
    }

    public static func setRootTabs(_ tabs: [(tab: String, screens: [Screen])], selected: String) -> NavigationOp {
        var op = NavigationOp()
        op.kind = .setRootTabs
        op.tabs = tabs.map { entry in
            var stack = Navigation.Stack()
            stack.tab = entry.tab
            stack.screens = entry.screens
            return stack
        }
        op.target = selected
        return op
    }

    public static func push(_ screen: Screen, tab: String = "") -> NavigationOp {
        var op = NavigationOp()
        op.kind = .push
        op.screens = [screen]
        op.tab = tab
        return op
    }

    public static func pop(tab: String = "") -> NavigationOp {
        var op = NavigationOp()
        op.kind = .pop
        op.tab = tab
        return op
    }

    /// Pops until the top screen's kind or id is `target`.
    public static func popTo(_ target: String, tab: String = "") -> NavigationOp {
        var op = NavigationOp()
        op.kind = .popTo
        op.target = target
        op.tab = tab
        return op
    }

    public static func popToRoot(tab: String = "") -> NavigationOp {
        var op = NavigationOp()
        op.kind = .popToRoot
        op.tab = tab
        return op
    }

    public static func present(_ screen: Screen) -> NavigationOp {
        var op = NavigationOp()
        op.kind = .present
        op.screens = [screen]
        return op
    }

    public static let dismiss: NavigationOp = {
        var op = NavigationOp()
        op.kind = .dismiss
        return op
    }()

    public static func selectTab(_ tab: String) -> NavigationOp {
        var op = NavigationOp()
        op.kind = .selectTab
        op.target = tab
        return op
    }
}

/// Why a navigation operation could not be applied.
public struct NavigationError: Error, Equatable, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

extension Flowbus_V1_Navigation {
    /// The index of the stack an operation on `tab` acts on: the named tab, else the selected one.
    func stackIndex(tab: String) throws(NavigationError) -> Int {
        guard !stacks.isEmpty else { throw NavigationError("the session has no navigation root yet; set one with setRoot first") }
        if root == .stack { return 0 }
        let name = tab.isEmpty ? selectedTab : tab
        guard let index = stacks.firstIndex(where: { $0.tab == name }) else {
            throw NavigationError("there is no tab \"\(name)\"; the tabs are \(stacks.map(\.tab).joined(separator: ", "))")
        }
        return index
    }

    /// The screen a person sees: the modal if any, else the top of the selected stack.
    public var topScreen: Screen? {
        if hasModal { return modal }
        return selectedStack?.screens.last
    }

    /// The stack shown now (the single stack, or the selected tab's).
    /// What selecting `tab` does: shows it; the tab already shown, deeper than its first
    /// screen (and no modal over it), goes back to its first screen, as tab bars do.
    public func selecting(tab: String) -> [NavigationOp] {
        if !hasModal, tab == selectedTab, (selectedStack?.screens.count ?? 0) > 1 { return [.popToRoot(tab: tab)] }
        return [.selectTab(tab)]
    }

    public var selectedStack: Stack? {
        guard let index = try? stackIndex(tab: "") else { return nil }
        return stacks[index]
    }

    /// Every screen anywhere in the picture, modal included.
    public var allScreens: [Screen] {
        stacks.flatMap(\.screens) + (hasModal ? [modal] : [])
    }

    /// Applies `ops` in order; returns whether anything changed. Does not touch `version`.
    /// Pushing a screen whose id is already on that stack and presenting the modal already
    /// shown change nothing, so a retried or duplicated operation is harmless.
    public mutating func apply(_ ops: [NavigationOp]) throws(NavigationError) -> Bool {
        var next = self
        for op in ops { try next.applyOne(op) }
        let changed = next != self
        self = next
        return changed
    }

    mutating func applyOne(_ op: NavigationOp) throws(NavigationError) {
        switch op.kind {
        case .setRootStack:
            guard !op.screens.isEmpty else { throw NavigationError("setRoot needs at least one screen") }
            var stack = Stack()
            stack.screens = op.screens
            root = .stack
            stacks = [stack]
            selectedTab = ""
            clearModal()
        case .setRootTabs:
            guard !op.tabs.isEmpty, op.tabs.allSatisfy({ !$0.tab.isEmpty && !$0.screens.isEmpty }) else {
                throw NavigationError("setRoot with tabs needs named tabs, each with a root screen")
            }
            guard op.tabs.contains(where: { $0.tab == op.target }) else {
                throw NavigationError("the selected tab \"\(op.target)\" is not one of the tabs")
            }
            root = .tabs
            stacks = op.tabs
            selectedTab = op.target
            clearModal()
        case .push:
            guard let screen = op.screens.first, !screen.id.isEmpty else { throw NavigationError("push needs a screen with an id") }
            let index = try stackIndex(tab: op.tab)
            if !stacks[index].screens.contains(where: { $0.id == screen.id }) {
                stacks[index].screens.append(screen)
            }
        case .pop:
            let index = try stackIndex(tab: op.tab)
            guard stacks[index].screens.count > 1 else { throw NavigationError("nothing to go back to: this is the first screen") }
            stacks[index].screens.removeLast()
        case .popTo:
            let index = try stackIndex(tab: op.tab)
            guard let target = stacks[index].screens.lastIndex(where: { $0.kind == op.target || $0.id == op.target }) else {
                throw NavigationError("popTo: no screen \"\(op.target)\" on the stack")
            }
            stacks[index].screens.removeSubrange((target + 1)...)
        case .popToRoot:
            let index = try stackIndex(tab: op.tab)
            stacks[index].screens.removeSubrange(1...)
        case .present:
            guard let screen = op.screens.first, !screen.id.isEmpty else { throw NavigationError("present needs a screen with an id") }
            modal = screen
        case .dismiss:
            clearModal()
        case .selectTab:
            guard root == .tabs, stacks.contains(where: { $0.tab == op.target }) else {
                throw NavigationError("there is no tab \"\(op.target)\" to select")
            }
            selectedTab = op.target
        case .unspecified, .UNRECOGNIZED:
            throw NavigationError("unknown navigation operation \(op.kind.rawValue); this host knows setRoot, push, pop, popTo, popToRoot, present, dismiss and selectTab")
        }
    }
}

/// The navigation actions every screen may have, applied by the navigation owner itself
/// (`coord.app`) and offered in `Navigation.actions`.
public enum SessionActions {
    public static let names: Set<String> = ["back", "selectTab", "ok", "dismiss"]
    static let service = "coord.app"

    /// What `navigation` offers now: `back` (disabled on a first screen), `selectTab` with a
    /// tab root, `ok` while a modal shows.
    public static func offered(by navigation: Navigation) -> [Flowbus_V1_Action] {
        guard !navigation.stacks.isEmpty else { return [] }
        let depth = navigation.selectedStack?.screens.count ?? 0
        var actions = [ActionSpec("back", label: "Back").wire(
            service: service, handler: .coordinator,
            disabledReason: navigation.hasModal || depth > 1 ? nil : "this is the first screen: there is nothing to go back to")]
        if navigation.root == .tabs {
            actions.append(ActionSpec("selectTab", label: "Tab", fields: ["tab"]).wire(service: service, handler: .coordinator))
        }
        if navigation.hasModal {
            actions.append(ActionSpec("ok", label: "OK").wire(service: service, handler: .coordinator))
        }
        return actions
    }
}
