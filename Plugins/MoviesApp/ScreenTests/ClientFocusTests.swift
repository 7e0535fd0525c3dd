@testable import FlowClient
import FlowProtocol
@testable import FlowTerminal
import MoviesApp
import Testing

/// Where the focus goes (issue 17): to the field an error is about, back to where it was on a
/// screen shown again, into lists by Tab, and out of a text field by Esc.
@Suite("Client focus")
struct ClientFocusTests {
    static let signIn = Views.screen("signin", owner: "auth", title: "Sign in")

    /// Sign-in showing the error `message` about `field`, at screen version 3.
    static func signInError(_ message: String, field: String) -> SessionView {
        var view = Views.auth([signIn], version: 4)
        var state = Views.state("signin", .error, message: message, version: 3)
        state.state.errorField = field
        view.states["signin"] = state
        return view
    }

    static func focusedName(_ controller: ClientController) -> String? {
        guard let target = controller.focusedTarget, let form = controller.form else { return nil }
        switch form.blocks[target.block] {
        case .field(let field): return field.name
        case .choices(let name, _, _, _): return name
        case .buttons(let buttons): return buttons[target.button].action
        case .list(let id, _, _, _, _), .carousel(let id, _, _, _, _): return id
        default: return nil
        }
    }

    @Test("after an error's OK, the field it is about has the focus, so typing goes there and fires no shortcut")
    func errorFocusesItsField() {
        let controller = ClientController(view: Views.auth([Self.signIn]))
        for key in Array("demo@flowbus.dev".map(Key.character)) + [.tab, .tab] { _ = controller.handle(key) }
        #expect(Self.focusedName(controller) == "logIn")
        _ = controller.handle(.enter)
        controller.finished(ClientControllerTests.outcome("logIn", applied: true, version: 3))
        controller.update(Self.signInError("Enter your password.", field: "password"))
        #expect(controller.alert?.message == "Enter your password.")
        _ = controller.handle(.enter)  // OK
        #expect(controller.alert == nil)
        #expect(Self.focusedName(controller) == "password" && controller.editing)
        #expect(controller.handle(.character("l")).isEmpty && !controller.showLog, "l toggled the log")
        #expect(controller.handle(.character("q")).isEmpty, "q quit")
        #expect(controller.value("password") == "lq")
    }

    @Test("an error about no field leaves the focus where it was")
    func errorWithoutFieldKeepsTheFocus() {
        let controller = ClientController(view: Views.auth([Self.signIn]))
        for key: Key in [.tab, .tab] { _ = controller.handle(key) }
        controller.update(Self.signInError("The sign-in service is not available right now.", field: ""))
        _ = controller.handle(.enter)
        #expect(Self.focusedName(controller) == "logIn")
    }

    @Test("Tab reaches the Cast list of a movie's details, and Shift-Tab comes back to the buttons")
    func tabReachesLists() {
        let home = Views.screen("home", owner: "home", title: "Home")
        let movie = Views.screen("details", id: "details-movie-19", owner: "home", title: "Details", params: ["item": "movie:19"])
        var view = Views.main(selected: "home", screens: [home, movie])
        view.states["details"] = Views.state("details", .success, data: Views.details(actor: false), screenID: "details-movie-19")
        let controller = ClientController(view: view)
        #expect(Self.focusedName(controller) == "like")
        _ = controller.handle(.tab)
        _ = controller.handle(.tab)
        #expect(Self.focusedName(controller) == "cast")
        #expect(controller.handle(.enter) == [.send(action: "select", fields: ["item": "actor:1"])])
        controller.finished(ClientControllerTests.outcome("select", applied: true, version: 11))
        _ = controller.handle(.backTab)
        #expect(Self.focusedName(controller) == "markWatched")
    }

    @Test("going back gives the screen its focus again, not its first control")
    func backRestoresTheFocus() {
        let home = Views.screen("home", owner: "home", title: "Home")
        var view = Views.main(selected: "home", screens: [home], version: 9)
        view.states["home"] = Views.state("home", .success, data: Views.homeFeed)
        let controller = ClientController(view: view)
        for key: Key in [.tab, .tab, .right] { _ = controller.handle(key) }
        #expect(Self.focusedName(controller) == "popularActors" && controller.cursor("popularActors") == 1)
        let actor = Views.screen("details", id: "details-actor-2", owner: "home", title: "Details", params: ["item": "actor:2"])
        var deeper = Views.main(selected: "home", screens: [home, actor], version: 10)
        deeper.states["home"] = view.states["home"]
        deeper.states["details"] = Views.state("details", .success, data: Views.details(actor: true), screenID: "details-actor-2")
        controller.update(deeper)
        #expect(Self.focusedName(controller) == "like")
        // Another tab and back keep it too: Home stays in its stack meanwhile.
        var back = Views.main(selected: "home", screens: [home], version: 11)
        back.states["home"] = view.states["home"]
        controller.update(back)
        #expect(Self.focusedName(controller) == "popularActors" && controller.cursor("popularActors") == 1)
    }

    @Test("a screen shown again with an empty text field gives that field the focus, so typing fires no shortcut")
    func emptyFieldTakesTheFocusOnReturn() {
        let controller = ClientController(view: Views.auth([Self.signIn], version: 3))
        for _ in 0..<4 { _ = controller.handle(.tab) }
        #expect(Self.focusedName(controller) == "forgotPassword")
        controller.update(Views.auth([Self.signIn, Views.screen("forgotpassword", owner: "auth", title: "Forgot password")], version: 4))
        controller.update(Views.auth([Self.signIn], version: 5))
        #expect(Self.focusedName(controller) == "email" && controller.editing)
        #expect(controller.handle(.character("l")).isEmpty && !controller.showLog)
    }

    @Test("Esc leaves a text field, so 1–4 pick tabs (Alt-1 arrives as Esc, 1); Esc again goes back")
    func escapeLeavesATextField() {
        let change = Views.screen("changepassword", owner: "settings", title: "Change password")
        let view = Views.main(selected: "settings", screens: [Views.screen("settings", owner: "settings", title: "Settings"), change])
        let controller = ClientController(view: view)
        #expect(controller.editing)
        #expect(controller.handle(.character("1")).isEmpty && controller.value("current") == "1", "a digit is typed in a field")
        #expect(controller.handle(.escape).isEmpty, "Esc in a field goes nowhere")
        #expect(!controller.editing && Self.focusedName(controller) == "change")
        #expect(controller.notice.contains("1–4 pick tabs"), "\(controller.notice)")
        #expect(controller.handle(.character("1")) == [.send(action: "selectTab", fields: ["tab": "home"])])
        controller.finished(ClientControllerTests.outcome("selectTab", applied: true, version: 10))
        #expect(controller.handle(.escape) == [.send(action: "back", fields: [:])])
    }
}
