@testable import FlowClient
import FlowKit
import FlowProtocol
@testable import FlowTerminal
import Testing

/// Any plugin's screen, drawn and acted on from what it publishes alone: a presentation made
/// here by hand, of an app the terminal client has never heard of.
@Suite("Generic screens")
struct GenericScreenTests {
    static func action(_ name: String, label: String, fields: [String] = [], disabled: String? = nil, clears: Bool = false) -> Flowbus_V1_Action {
        var spec = ActionSpec(name, label: label, fields: fields, clearsFields: clears)
        spec.clearsFields = clears
        return spec.wire(service: "vm.garden", handler: .viewModel, disabledReason: disabled)
    }

    /// A "garden" screen: a text field with a limit, a number, a choice, a multi-choice, buttons
    /// (one disabled), a list with values in a column, a summary and a notice.
    static func view(version: UInt64 = 3, phase: Flowbus_V1_ViewState.Phase = .success) -> SessionView {
        var screen = Flowbus_V1_Screen.make("garden", owner: "greenhouse", title: "Garden")
        screen.actions = [ActionSpec("pick", label: "Open", fields: ["plant"]).wire(service: "coord.greenhouse", handler: .coordinator)]
        var navigation = Flowbus_V1_Navigation()
        var stack = Flowbus_V1_Navigation.Stack()
        stack.screens = [screen]
        navigation.stacks = [stack]
        navigation.version = 7
        navigation.actions = SessionActions.offered(by: navigation)
        var state = Flowbus_V1_ViewState()
        state.phase = phase
        state.screenVersion = version
        state.screenID = "garden"
        state.presentation = Presentation(title: "My garden", [
            .heading("Spring beds"),
            .field("name", label: "Name", maxLength: 5),
            .field("rows", label: "Rows", kind: .number),
            .field("soil", label: "Soil", kind: .choice, options: [("clay", "Clay"), ("sand", "Sand")]),
            .field("tags", label: "Tags", kind: .multiChoice, options: [("sun", "Sunny"), ("wet", "Wet")]),
            .buttons([.to("plant"), .to("harvest")]),
            .collection("beds", title: "Beds", items: [
                Flowbus_V1_Item(id: "bed:1", title: "Tomatoes", subtitle: "south", detail: "12 kg"),
                Flowbus_V1_Item(id: "bed:2", title: "Beans", subtitle: "north", detail: "3 kg"),
            ], action: "pick", field: "plant"),
            .summary("Total", "15 kg"),
            .notice("Watered this morning."),
        ])
        state.actions = [
            action("plant", label: "Plant", fields: ["name", "rows", "soil", "tags"], clears: true),
            action("harvest", label: "Harvest", disabled: "nothing is ripe yet"),
        ]
        var view = SessionView(session: "g1")
        view.navigation = navigation
        view.states["garden"] = ScreenState(kind: "garden", state: state, writer: "vm-garden", incarnation: 1, sequence: 4)
        return view
    }

    @Test("every component is drawn: title, heading, fields, choices, buttons, a list in columns, the total and the notice")
    func drawsEveryComponent() {
        let controller = ClientController(view: Self.view())
        let text = ScreenRenderer.render(controller, rows: 30, columns: 80).text
        for shown in ["My garden", "Spring beds", "Name", "Rows", "( ) Clay", "( ) Sand", "[ ] Sunny", "[ ] Wet", "[ Plant ]", "[ Harvest ]",
                      "Beds", "Tomatoes", "south", "12 kg", "Total: 15 kg", "Watered this morning."] {
            #expect(text.contains(shown), "missing \(shown):\n\(text)")
        }
        let row = text.split(separator: "\n").first { $0.contains("Tomatoes") } ?? ""
        #expect(row.hasSuffix("12 kg") || row.contains("12 kg "), "the value is in a column of its own: \(row)")
    }

    @Test("an action sends the fields it declares, typed within their limits; a choice sends its id")
    func sendsDeclaredFields() {
        let controller = ClientController(view: Self.view())
        let keys: [Key] = "Carrots".map(Key.character) + [.tab] + "4x".map(Key.character) + [.tab, .right, .character(" "), .tab, .character(" "), .right, .character(" "), .tab]
        for key in keys { _ = controller.handle(key) }
        #expect(controller.value("name") == "Carro", "the field takes at most 5 characters")
        #expect(controller.value("rows") == "4", "a number field takes digits only")
        #expect(controller.handle(.enter) == [.send(action: "plant", fields: ["name": "Carro", "rows": "4", "soil": "sand", "tags": "sun,wet"])])
    }

    @Test("a disabled action says why and sends nothing; selecting a list entry sends its id to the owner's action")
    func disabledAndSelection() {
        let controller = ClientController(view: Self.view())
        for _ in 0..<5 { _ = controller.handle(.tab) }
        #expect(controller.handle(.enter) == [])
        #expect(controller.notice == "Harvest is not available now: nothing is ripe yet")
        _ = controller.handle(.tab)
        _ = controller.handle(.down)
        #expect(controller.handle(.enter) == [.send(action: "pick", fields: ["plant": "bed:2"])])
    }

    @Test("the focus does not rest on a button that cannot be pressed: it starts on, and moves to, the next one")
    func focusSkipsADisabledButton() {
        var view = Self.view()
        view.states["garden"]?.state.presentation.components.insert(.buttons([.to("harvest"), .to("plant")]), at: 0)
        let controller = ClientController(view: view)
        #expect(controller.focusedTarget == FocusTarget(block: 0, button: 1), "the first target, Harvest, is disabled")
        #expect(controller.handle(.enter) == [.send(action: "plant", fields: ["name": "", "rows": "", "soil": "", "tags": ""])])
    }

    @Test("a session closed under the client says so and why, not that a screen is coming")
    func saysTheSessionWasClosed() {
        var view = Self.view()
        view.navigation = nil
        view.states = [:]
        view.closedReason = "idle for 3600 s"
        let text = ScreenRenderer.render(ClientController(view: view), rows: 24, columns: 80).text
        #expect(text.contains("This session was closed (idle for 3600 s)."))
        #expect(text.contains("`flowbus client` opens a new session"))
        #expect(!text.contains("Waiting for the session's first screen"))
    }

    /// The help fits its frame at any size: its box closes on every row, nothing runs past it,
    /// and what does not fit says so. (At 40×12 it used to run out of its box.)
    @Test("the help overlay stays inside its frame from 80×24 down to 30×8", arguments: [(24, 80), (12, 40), (16, 40), (8, 30)])
    func helpFitsItsFrame(rows: Int, columns: Int) {
        let controller = ClientController(view: Self.view())
        controller.showHelp = true
        let lines = ScreenRenderer.render(controller, rows: rows, columns: columns).text.split(separator: "\n", omittingEmptySubsequences: false)
        let top = lines.firstIndex { $0.contains("┌─ Keys ") }
        let bottom = lines.lastIndex { $0.contains("└") }
        guard let top, let bottom else {
            Issue.record("no help box at \(rows)×\(columns):\n\(lines.joined(separator: "\n"))")
            return
        }
        let edge = Array(lines[top])
        let left = edge.firstIndex(of: "┌")!
        let right = edge.firstIndex(of: "┐")!
        for row in (top + 1)..<bottom {
            let line = Array(lines[row])
            #expect(line.count > right && line[left] == "│" && line[right] == "│",
                    "row \(row) at \(rows)×\(columns) runs out of the box: \(lines[row])")
        }
        #expect(Array(lines[bottom]).firstIndex(of: "┘") == right)
        let shown = lines[top...bottom].joined(separator: "\n")
        #expect(shown.contains("quit") || shown.contains("more: enlarge"), "\(shown)")
        if rows >= 24 { #expect(shown.contains("Tab / Shift-Tab  next / previous control") && shown.contains("q, Ctrl-C        quit")) }
    }

    @Test("a screen whose view model has not published shows a wait, not another app's form")
    func waitsForThePresentation() {
        var view = Self.view()
        view.states = [:]
        let text = ScreenRenderer.render(ClientController(view: view), rows: 24, columns: 80).text
        #expect(text.contains("Loading…"))
        #expect(!text.contains("Spring beds"))
    }
}
