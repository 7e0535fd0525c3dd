@testable import FlowClient
import MoviesApp
import FlowProtocol
@testable import FlowTerminal
import Testing

/// The controller's behaviour over time: replies and new views after keys.
@Suite("Client controller")
struct ClientControllerTests {
    static func outcome(_ action: String, applied: Bool, version: UInt64) -> IntentOutcome {
        var intent = Flowbus_V1_Intent()
        intent.action = action
        var reply = Flowbus_V1_IntentReply()
        reply.applied = applied
        reply.screenVersion = version
        return IntentOutcome(prepared: PreparedIntent(route: .viewModel(kind: "expenses"), intent: intent, idempotencyKey: "k"), reply: reply)
    }

    static func expenses(_ phase: Flowbus_V1_ViewState.Phase, version: UInt64, message: String = "") -> SessionView {
        var view = Views.main(selected: "expenses", screens: [Views.screen("expenses", owner: "expenses", title: "Relatório de despesas")])
        view.states["expenses"] = Views.state("expenses", phase, data: Views.report([]), message: message, version: version)
        return view
    }

    @Test("the expense form keeps what was typed when adicionar ends in error, and empties when it ends in success")
    func expenseFormClearsOnlyOnSuccess() {
        let controller = ClientController(view: Self.expenses(.success, version: 4))
        // Tipo is a choice: Space chooses the option under the cursor ("1 Eletrônicos").
        for key in Array("Monitor".map(Key.character)) + [.tab, .character(" "), .tab] + "100,00".map(Key.character) + [.tab] {
            _ = controller.handle(key)
        }
        #expect(controller.handle(.enter) == [.send(action: "adicionar", fields: ["titulo": "Monitor", "tipo": "1", "valor": "100,00"])])
        controller.finished(Self.outcome("adicionar", applied: true, version: 5))
        controller.update(Self.expenses(.loading, version: 5))
        controller.update(Self.expenses(.error, version: 6, message: "Valor inválido"))
        #expect(controller.value("titulo") == "Monitor" && controller.value("tipo") == "1", "the form was emptied by an error")
        _ = controller.handle(.enter)  // OK on the alert
        #expect(controller.alert == nil)

        // Choose the other type and add again: success empties the form.
        _ = controller.handle(.backTab)
        _ = controller.handle(.backTab)
        _ = controller.handle(.right)
        _ = controller.handle(.character(" "))
        #expect(controller.value("tipo") == "2")
        for _ in 0..<2 { _ = controller.handle(.tab) }
        #expect(controller.handle(.enter) == [.send(action: "adicionar", fields: ["titulo": "Monitor", "tipo": "2", "valor": "100,00"])])
        controller.finished(Self.outcome("adicionar", applied: true, version: 7))
        controller.update(Self.expenses(.loading, version: 7))
        #expect(controller.value("titulo") == "Monitor", "emptied before the state settled")
        controller.update(Self.expenses(.success, version: 8))
        #expect(controller.value("titulo").isEmpty && controller.value("tipo").isEmpty && controller.value("valor").isEmpty)
        // The next expense is typed from Título (issue 17: the focus stayed on Adicionar, and
        // typing "Monitor" fired shortcuts).
        #expect(controller.editing && controller.handle(.character("l")).isEmpty && controller.value("titulo") == "l")
    }

    @Test("typed values and passwords of a screen that left the navigation are forgotten")
    func valuesLeaveWithTheirScreen() {
        let signIn = Views.auth([Views.screen("signin", owner: "auth", title: "Sign in")])
        let controller = ClientController(view: signIn)
        for key in Array("demo@flowbus.dev".map(Key.character)) + [.tab] + "secret".map(Key.character) { _ = controller.handle(key) }
        #expect(controller.value("password") == "secret")
        controller.update(Views.main(selected: "home", screens: [Views.screen("home", owner: "home", title: "Home")], version: 4))
        controller.update(Views.auth([Views.screen("signin", owner: "auth", title: "Sign in")], version: 5))
        #expect(controller.value("password").isEmpty && controller.value("email").isEmpty)
    }

    @Test("q quits outside a text field and types inside one; Ctrl-C always quits")
    func quitKeys() {
        let signIn = Views.auth([Views.screen("signin", owner: "auth", title: "Sign in")])
        let controller = ClientController(view: signIn)
        #expect(controller.editing)
        #expect(controller.handle(.character("q")) == [])
        #expect(controller.value("email") == "q")
        #expect(controller.handle(.control("c")) == [.quit])
        for _ in 0..<2 { _ = controller.handle(.tab) }
        #expect(!controller.editing)
        #expect(controller.handle(.character("q")) == [.quit])
    }

    /// Issue 17: only Backspace edited a text field.
    @Test("a text field edits as a line editor: the caret moves, and characters go in and out where it is")
    func lineEditing() {
        let controller = ClientController(view: Views.auth([Views.screen("signin", owner: "auth", title: "Sign in")]))
        func type(_ keys: [Key]) { for key in keys { _ = controller.handle(key) } }
        type("abc".map(Key.character) + [.left, .left, .character("X")])
        #expect(controller.value("email") == "aXbc" && controller.caret("email") == 2)
        type([.home, .character(">"), .end, .character("<")])
        #expect(controller.value("email") == ">aXbc<")
        type([.control("a"), .right, .delete])
        #expect(controller.value("email") == ">Xbc<" && controller.caret("email") == 1)
        type([.control("k")])
        #expect(controller.value("email") == ">")
        type(" ana bel".map(Key.character) + [.control("w")])
        #expect(controller.value("email") == "> ana ")
        type([.left, .left, .backspace])
        #expect(controller.value("email") == "> aa " && controller.caret("email") == 3)
        type([.control("u")])
        #expect(controller.value("email") == "a " && controller.caret("email") == 0)
        // The caret shows where it is, not at the end.
        let text = ScreenRenderer.render(controller, rows: 24, columns: 80).text
        #expect(text.contains("[▏a "), "\(text)")
    }

    @Test("Enter in the last field before the buttons submits with the first of them")
    func enterInTheLastFieldSubmits() {
        let controller = ClientController(view: Views.auth([Views.screen("signin", owner: "auth", title: "Sign in")]))
        for key in "ana@example.com".map(Key.character) { _ = controller.handle(key) }
        #expect(controller.handle(.enter).isEmpty, "Enter in the e-mail field goes on to the password")
        for key in "secret12".map(Key.character) { _ = controller.handle(key) }
        #expect(controller.handle(.enter) == [.send(action: "logIn", fields: ["email": "ana@example.com", "password": "secret12"])])
    }

    @Test("Esc goes back on a deep stack (out of a text field first), dismisses a modal with ok, and says so when there is nothing to go back to")
    func back() {
        let deep = Views.auth([Views.screen("signin", owner: "auth", title: "Sign in"), Views.screen("forgotpassword", owner: "auth", title: "Forgot password")])
        let forgot = ClientController(view: deep)
        #expect(forgot.handle(.escape) == [] && !forgot.editing, "Esc leaves the e-mail field first")
        #expect(forgot.handle(.escape) == [.send(action: "back", fields: [:])])
        let modal = Views.auth([Views.screen("signin", owner: "auth", title: "Sign in")], modal: Views.screen("confirmation", title: "Done", params: ["text": "ok"]))
        #expect(ClientController(view: modal).handle(.escape) == [.send(action: "ok", fields: [:])])
        let root = ClientController(view: Views.auth([Views.screen("signin", owner: "auth", title: "Sign in")]))
        _ = root.handle(.escape)
        #expect(root.handle(.escape) == [])
        #expect(root.notice == "nothing to go back to")
    }

    @Test("tabs: digits and brackets send selectTab when no field has the keys")
    func tabs() {
        var view = Views.main(selected: "home", screens: [Views.screen("home", owner: "home", title: "Home")])
        view.states["home"] = Views.state("home", .success, data: Views.homeFeed)
        let controller = ClientController(view: view)
        #expect(controller.handle(.character("4")) == [.send(action: "selectTab", fields: ["tab": "expenses"])])
        controller.finished(Self.outcome("selectTab", applied: true, version: 10))
        #expect(controller.handle(.character("[")) == [.send(action: "selectTab", fields: ["tab": "expenses"])])
        controller.finished(Self.outcome("selectTab", applied: true, version: 11))
        #expect(controller.handle(.character("]")) == [.send(action: "selectTab", fields: ["tab": "likes"])])
    }

    /// Issue 17: 300 KB pasted into Name was taken whole. The client stops at the field's limit
    /// (the view model's, published with its presentation) and says so.
    @Test("typing past a field's limit is refused, and the status line says the limit")
    func fieldLimitsAreSaid() {
        let controller = ClientController(view: Views.auth([
            Views.screen("signin", owner: "auth", title: "Sign in"), Views.screen("signup", owner: "signup", title: "Create account"),
        ]))
        for key in String(repeating: "n", count: 5_000).map(Key.character) { _ = controller.handle(key) }
        #expect(controller.value("name").count == 80)
        #expect(controller.notice == "Name takes at most 80 characters", "\(controller.notice)")
        _ = controller.handle(.tab)
        _ = controller.handle(.tab)
        for key in String(repeating: "e", count: 300).map(Key.character) { _ = controller.handle(key) }
        #expect(controller.value("email").count == 254 && controller.notice == "E-mail takes at most 254 characters")
    }

    /// Issue 17: Resend confirmed only as "resend applied".
    @Test("an applied action is confirmed in the screen's own words once its state comes, by its label without them, and not at all when it ended in an error",
          arguments: [("We sent a new code to rita@flowbus.dev.", Flowbus_V1_ViewState.Phase.success, "We sent a new code to rita@flowbus.dev."),
                      ("", .success, "Resend code: done"),
                      ("The verification service is not available right now.", .error, "")])
    func appliedActionsSayWhatHappened(message: String, phase: Flowbus_V1_ViewState.Phase, expected: String) {
        let verify = Views.screen("emailverification", owner: "signup", title: "Verify e-mail", params: ["email": "rita@flowbus.dev"])
        var view = Views.auth([Views.screen("signin", owner: "auth", title: "Sign in"), verify])
        let controller = ClientController(view: view)
        for _ in 0..<2 { _ = controller.handle(.tab) }
        #expect(controller.handle(.enter) == [.send(action: "resend", fields: [:])])
        #expect(controller.notice == "Resend code…")
        var intent = Flowbus_V1_Intent()
        intent.action = "resend"
        var reply = Flowbus_V1_IntentReply()
        reply.applied = true
        reply.screenVersion = 3
        controller.finished(IntentOutcome(
            prepared: PreparedIntent(route: .viewModel(kind: "emailverification"), intent: intent, idempotencyKey: "k"), reply: reply))
        #expect(!controller.notice.contains("applied"), "\(controller.notice)")
        var state = Views.state("emailverification", phase, version: 3, params: ["email": "rita@flowbus.dev"])
        state.state.message = message
        view.states["emailverification"] = state
        controller.update(view)
        #expect(controller.notice == expected)
    }

    /// Issue 17: `1 4` typed quickly from Details ended on Home, the 4 dropped as "in flight".
    @Test("tabs pressed while an action is in flight are not lost: the last one is selected once it is answered")
    func tabsPressedWhileBusyAreSelectedAfter() {
        var view = Views.main(selected: "home", screens: [Views.screen("home", owner: "home", title: "Home")])
        view.states["home"] = Views.state("home", .success, data: Views.homeFeed)
        let controller = ClientController(view: view)
        #expect(controller.handle(.character("1")) == [.send(action: "selectTab", fields: ["tab": "home"])])
        #expect(controller.handle(.character("3")).isEmpty)
        #expect(controller.handle(.character("4")).isEmpty)
        #expect(controller.notice.contains("tab expenses next"), "\(controller.notice)")
        #expect(controller.takeDeferred().isEmpty, "nothing is sent while the first is in flight")
        controller.finished(Self.outcome("selectTab", applied: true, version: 10))
        #expect(controller.takeDeferred() == [.send(action: "selectTab", fields: ["tab": "expenses"])])
        #expect(controller.takeDeferred().isEmpty, "sent once")
        // A refusal comes first: the person reads it, and the tab asked meanwhile is dropped.
        #expect(controller.handle(.character("2")).isEmpty)
        controller.finished(Self.outcome("selectTab", applied: false, version: 11))
        #expect(controller.takeDeferred().isEmpty)
    }
}
