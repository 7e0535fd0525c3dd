@testable import FlowClient
import MoviesApp
import FlowProtocol
@testable import FlowTerminal
import Testing

/// Every screen of APP.md rendered on a virtual screen (screen value in, rows of text out), at
/// 80×24 and at a wide size.
@Suite("Screen rendering")
struct ScreenRenderingTests {
    static let sizes: [(rows: Int, columns: Int)] = [(24, 80), (40, 132)]

    static func render(_ view: SessionView, rows: Int, columns: Int, keys: [Key] = [], readOnly: Bool = false) -> (Canvas, ClientController) {
        let controller = ClientController(view: view, readOnly: readOnly)
        for key in keys { _ = controller.handle(key) }
        return (ScreenRenderer.render(controller, rows: rows, columns: columns), controller)
    }

    /// Fails with the whole screen when `text` is not on it.
    static func expectShows(_ canvas: Canvas, _ texts: String..., sourceLocation: SourceLocation = #_sourceLocation) {
        for text in texts {
            #expect(canvas.text.contains(text), "\"\(text)\" is not on the \(canvas.columns)×\(canvas.rows) screen:\n\(canvas.text)", sourceLocation: sourceLocation)
        }
    }

    static func row(_ canvas: Canvas, containing text: String) -> Int? {
        canvas.lines.firstIndex { $0.contains(text) }
    }

    @Test("sign-in: title bar, e-mail and masked password, three buttons, no back, status line", arguments: sizes)
    func signIn(size: (rows: Int, columns: Int)) {
        let view = Views.auth([Views.screen("signin", owner: "auth", title: "Sign in")])
        let keys = Array("demo@flowbus.dev".map(Key.character)) + [.tab] + "flowbus123".map(Key.character)
        let (canvas, _) = Self.render(view, rows: size.rows, columns: size.columns, keys: keys)
        Self.expectShows(canvas, "Sign in", "E-mail", "[demo@flowbus.dev", "Password", "••••••••••", "[ Log in ]", "[ Create account ]",
                         "[ Forgot password ]", "session s-test", "nav v3")
        #expect(!canvas.text.contains("flowbus123"), "the password shows in clear:\n\(canvas.text)")
        #expect(!canvas.text.contains("‹ Back"))
        #expect(canvas.lines[0].contains("Sign in"))
        #expect(canvas[0, 0].role == .bar)
        #expect(canvas.lines[size.rows - 1].contains("connected"))
        #expect(canvas.lines.count == size.rows && canvas.lines.allSatisfy { $0.count <= size.columns })
    }

    @Test("sign-up: five fields and the genres as a multi-select; loading shows a spinner and disables the button", arguments: sizes)
    func signUp(size: (rows: Int, columns: Int)) {
        var view = Views.auth([Views.screen("signin", owner: "auth", title: "Sign in"), Views.screen("signup", owner: "signup", title: "Create account")])
        view.states["signup"] = Views.state("signup", .success, data: Views.genres)
        // Focus the genres (sixth target), choose the first and the third.
        let (canvas, controller) = Self.render(view, rows: size.rows, columns: size.columns,
                                               keys: [.tab, .tab, .tab, .tab, .tab, .character(" "), .right, .right, .character(" ")])
        Self.expectShows(canvas, "‹ Back", "Create account", "Name", "Nickname", "E-mail", "Password", "Confirm", "Genres",
                         "[x] Drama", "[ ] Comédia", "[x] Ação", "Documentário", "[ Sign up ]")
        #expect(controller.value("genres") == "drama,action")

        view.states["signup"] = Views.state("signup", .loading, version: 3)
        let (loading, _) = Self.render(view, rows: size.rows, columns: size.columns)
        Self.expectShows(loading, "loading", "Genres: loading…")
        let button = try! #require(Self.row(loading, containing: "[ Sign up ]"))
        let column = loading.lines[button].distance(from: loading.lines[button].startIndex, to: loading.lines[button].range(of: "[ Sign up ]")!.lowerBound)
        #expect(loading[button, column].role == .disabled)
    }

    @Test("e-mail verification: where the code went, the code field, verify and resend", arguments: sizes)
    func emailVerification(size: (rows: Int, columns: Int)) {
        let view = Views.auth([
            Views.screen("signin", owner: "auth", title: "Sign in"), Views.screen("signup", owner: "signup", title: "Create account"),
            Views.screen("emailverification", owner: "signup", title: "Verify e-mail", params: ["email": "rita@flowbus.dev"]),
        ])
        let (canvas, _) = Self.render(view, rows: size.rows, columns: size.columns)
        Self.expectShows(canvas, "Verify e-mail", "rita@flowbus.dev", "flowbus call svc.mail outbox", "Code", "[ Verify ]", "[ Resend code ]", "‹ Back")
    }

    @Test("forgot password, its confirmation drawn as a modal over the code screen, and the code screen", arguments: sizes)
    func forgotPassword(size: (rows: Int, columns: Int)) {
        let form = Views.auth([Views.screen("signin", owner: "auth", title: "Sign in"), Views.screen("forgotpassword", owner: "auth", title: "Forgot password")])
        let (canvas, _) = Self.render(form, rows: size.rows, columns: size.columns)
        Self.expectShows(canvas, "Forgot password", "6-digit code", "E-mail", "[ Send code ]")
        let reset = Views.screen("resetpassword", owner: "auth", title: "Choose a new password", params: ["email": "demo@flowbus.dev"])
        let modal = Views.auth([Views.screen("signin", owner: "auth", title: "Sign in"), reset],
                               modal: Views.screen("confirmation", owner: "auth", title: "Done", params: ["text": ForgotPasswordViewModel.sentText(to: "demo@flowbus.dev")]))
        let (shown, controller) = Self.render(modal, rows: size.rows, columns: size.columns)
        Self.expectShows(shown, "Done", "we mailed it a", "[ OK ]")
        let (codeScreen, _) = Self.render(Views.auth([Views.screen("signin", owner: "auth", title: "Sign in"), reset]), rows: size.rows, columns: size.columns)
        Self.expectShows(codeScreen, "Choose a new password", "demo@flowbus.dev", "Code", "New", "Confirm", "[ Set new password ]", "[ Send a new code ]", "‹ Back")
        #expect(shown.text.contains("┌"), "the modal has no box:\n\(shown.text)")
        #expect(controller.handle(.enter) == [.send(action: "ok", fields: [:])])
    }

    @Test("home: tab bar and five carousels; arrows move along a carousel and Enter selects", arguments: sizes)
    func home(size: (rows: Int, columns: Int)) {
        var view = Views.main(selected: "home", screens: [Views.screen("home", owner: "home", title: "Home")])
        view.states["home"] = Views.state("home", .success, data: Views.homeFeed)
        let (canvas, controller) = Self.render(view, rows: size.rows, columns: size.columns, keys: [.right, .right])
        Self.expectShows(canvas, "Home", "Now playing  3/8", "Movie number 1", "Movie number 3", "Upcoming", "Popular actors",
                         "Recently watched: nothing yet", "1 Home", "2 Likes", "3 Settings", "4 Expenses")
        #expect(controller.handle(.enter) == [.send(action: "select", fields: ["item": "movie:3"])])
        // The selected tab stands out.
        let tabRow = size.rows - 2
        #expect(canvas.lines[tabRow].contains("1 Home"))
        #expect(canvas.columns(of: .focus, row: tabRow).count == " 1 Home ".count)
    }

    @Test("details of a movie (like, cast) and of an actor (filmography), with back", arguments: sizes)
    func details(size: (rows: Int, columns: Int)) {
        let home = Views.screen("home", owner: "home", title: "Home")
        let actor = Views.screen("details", id: "details-actor-1", owner: "home", title: "Details", params: ["item": "actor:1"])
        var view = Views.main(selected: "home", screens: [home, actor])
        view.states["details"] = Views.state("details", .success, data: Views.details(actor: true), screenID: "details-actor-1")
        let (canvas, controller) = Self.render(view, rows: size.rows, columns: size.columns, keys: [.tab, .down])
        Self.expectShows(canvas, "‹ Back", "Details", "Fernanda Montenegro", "Filmography", "Central do Brasil — 1998", "O Auto da Compadecida")
        #expect(controller.handle(.enter) == [.send(action: "select", fields: ["item": "movie:3"])])

        let movie = Views.screen("details", id: "details-movie-19", owner: "home", title: "Details", params: ["item": "movie:19"])
        var second = Views.main(selected: "home", screens: [home, actor, movie])
        second.states["details"] = Views.state("details", .success, data: Views.details(actor: false, liked: true), screenID: "details-movie-19")
        let (shown, _) = Self.render(second, rows: size.rows, columns: size.columns)
        Self.expectShows(shown, "Central do Brasil (1998) · movie", "Drama", "schoolteacher", "[ ♥ Liked ]", "[ Mark watched ]", "Cast",
                         "Fernanda Montenegro — Dora")
    }

    @Test("likes: the liked items, or what to do when there are none", arguments: sizes)
    func likes(size: (rows: Int, columns: Int)) {
        var view = Views.main(selected: "likes", screens: [Views.screen("likes", owner: "main", title: "Likes")])
        var data = Movies_V1_ScreenData()
        var list = Movies_V1_ItemList()
        list.items = [Views.item("movie:19", "Central do Brasil", subtitle: "1998")]
        data.items = list
        view.states["likes"] = Views.state("likes", .success, data: data)
        let (canvas, controller) = Self.render(view, rows: size.rows, columns: size.columns)
        Self.expectShows(canvas, "Likes", "Liked", "Central do Brasil — 1998")
        #expect(controller.handle(.enter) == [.send(action: "select", fields: ["item": "movie:19"])])
        data.items = Movies_V1_ItemList()
        view.states["likes"] = Views.state("likes", .success, data: data, version: 3)
        let (empty, _) = Self.render(view, rows: size.rows, columns: size.columns)
        Self.expectShows(empty, "Nothing liked yet")
    }

    @Test("settings and change password", arguments: sizes)
    func settings(size: (rows: Int, columns: Int)) {
        var view = Views.main(selected: "settings", screens: [Views.screen("settings", owner: "settings", title: "Settings")])
        view.states["settings"] = Views.state("settings", .success, data: Views.account)
        let (canvas, controller) = Self.render(view, rows: size.rows, columns: size.columns, keys: [.tab])
        Self.expectShows(canvas, "Settings", "Demo User (demo)", "demo@flowbus.dev", "[ Change password ]", "[ Log out ]")
        #expect(controller.handle(.enter) == [.send(action: "logOut", fields: [:])])

        let change = Views.main(selected: "settings", screens: [Views.screen("settings", owner: "settings", title: "Settings"),
                                                                 Views.screen("changepassword", owner: "settings", title: "Change password")])
        let (form, formController) = Self.render(change, rows: size.rows, columns: size.columns,
                                                 keys: "old".map(Key.character) + [.tab] + "Newpass456".map(Key.character) + [.tab] + "Newpass456".map(Key.character) + [.tab])
        Self.expectShows(form, "Change password", "Current", "New", "Confirm", "••••••••••")
        #expect(formController.handle(.enter) == [.send(action: "change", fields: ["current": "old", "password": "Newpass456", "passwordConfirmation": "Newpass456"])])
    }

    @Test("expense report: form, expenses, total in reais, registrar enabled only above zero", arguments: sizes)
    func expenses(size: (rows: Int, columns: Int)) {
        var view = Views.main(selected: "expenses", screens: [Views.screen("expenses", owner: "expenses", title: "Relatório de despesas")])
        view.states["expenses"] = Views.state("expenses", .success, data: Views.report([]))
        let (empty, emptyController) = Self.render(view, rows: size.rows, columns: size.columns)
        // Tipo is a choice of the two types; the expenses are a list with the value in its own column.
        Self.expectShows(empty, "Relatório de despesas", "Título", "Tipo", "( ) Eletrônicos", "( ) Escritório", "Valor", "[ Adicionar ]",
                         "Nenhuma despesa ainda.", "Total: R$ 0,00", "[ Registrar ]")
        // Registrar is disabled with an empty report: focusing it and pressing Enter sends nothing, saying why.
        for _ in 0..<4 { _ = emptyController.handle(.tab) }
        #expect(emptyController.handle(.enter) == [])
        #expect(emptyController.notice.contains("Registrar is not available now: adicione ao menos uma despesa com valor"))

        view.states["expenses"] = Views.state("expenses", .success, data: Views.report([
            ("Monitor", "1", "R$ 1.234,56", 123_456), ("Cadeira", "2", "R$ 450,00", 45_000), ("Teclado", "1", "R$ 15,44", 1_544),
        ]), version: 5)
        let (full, controller) = Self.render(view, rows: size.rows, columns: size.columns,
                                             keys: "Mouse".map(Key.character) + [.tab, .character(" "), .tab] + "89,90".map(Key.character) + [.tab])
        Self.expectShows(full, "Monitor", "Eletrônicos", "R$ 1.234,56", "Cadeira", "Escritório", "R$ 450,00", "Teclado", "R$ 15,44", "Total: R$ 1.700,00")
        // Issue 17: a readable title (the report's date and size, never its id), and rows in columns.
        Self.expectShows(full, "Relatório de 23/11/2026 · 3 despesas")
        #expect(!full.text.contains("r-1"), "the report's id is shown:\n\(full.text)")
        let rows = full.lines.filter { line in ["Monitor", "Cadeira", "Teclado"].contains { line.contains("  \($0)") } }
        #expect(rows.count == 3, "\(full.text)")
        let typeColumns = Set(rows.map { row in row.distance(from: row.startIndex, to: row.range(of: row.contains("Eletrônicos") ? "Eletrônicos" : "Escritório")!.lowerBound) })
        let valueEnds = Set(rows.map { $0.reversed().drop { $0 == " " || $0 == "│" }.count })
        #expect(typeColumns.count == 1 && valueEnds.count == 1, "the rows do not line up:\n\(rows.joined(separator: "\n"))")
        #expect(controller.handle(.enter) == [.send(action: "adicionar", fields: ["titulo": "Mouse", "tipo": "1", "valor": "89,90"])])
    }

    @Test("an error state is a modal alert with the view model's message and OK; OK acknowledges it", arguments: sizes)
    func errorAlert(size: (rows: Int, columns: Int)) {
        var view = Views.auth([Views.screen("signin", owner: "auth", title: "Sign in")])
        view.states["signin"] = Views.state("signin", .error, message: "Invalid e-mail or password.", version: 4)
        let (canvas, controller) = Self.render(view, rows: size.rows, columns: size.columns)
        Self.expectShows(canvas, "Error", "Invalid e-mail or password.", "[ OK ]")
        #expect(controller.handle(.enter) == [])
        let (after, _) = (ScreenRenderer.render(controller, rows: size.rows, columns: size.columns), ())
        #expect(!after.text.contains("Invalid e-mail or password."), "the alert stayed after OK:\n\(after.text)")
    }

    @Test("an unverified account's error offers to verify the e-mail")
    func unverified() {
        var view = Views.auth([Views.screen("signin", owner: "auth", title: "Sign in")])
        var data = Movies_V1_ScreenData()
        var account = Movies_V1_Account()
        account.email = "new@flowbus.dev"
        data.account = account
        view.states["signin"] = Views.state("signin", .error, data: data, notice: "unverified", message: "Verify your e-mail to sign in.", version: 4)
        let (canvas, controller) = Self.render(view, rows: 24, columns: 80, keys: [.tab])
        Self.expectShows(canvas, "Verify your e-mail to sign in.", "[ OK ]", "[ Verify e-mail ]")
        #expect(controller.handle(.enter) == [.send(action: "verifyEmail", fields: ["email": "new@flowbus.dev"])])
    }

    @Test("help, the event log pane (below at 80 columns, beside when wide) and a too-small terminal")
    func chrome() {
        let view = Views.auth([Views.screen("signin", owner: "auth", title: "Sign in")])
        let (help, _) = Self.render(view, rows: 24, columns: 80, keys: [.help])
        Self.expectShows(help, "Keys", "Tab / Shift-Tab", "quit")
        let controller = ClientController(view: view)
        _ = controller.handle(.toggleLog)
        let events = ["#1 seq 5 nav v1 top signin stack [signin] by coord-app/1", "#2 → vm.signin logIn on v0 key client/1/x/1"]
        for (rows, columns) in [(24, 80), (40, 132)] {
            let canvas = ScreenRenderer.render(controller, rows: rows, columns: columns, context: RenderContext(events: events))
            Self.expectShows(canvas, "event log", "nav v1 top signin", "→ vm.signin logIn", "[ Log in ]")
            let logRow = try! #require(Self.row(canvas, containing: "event log"))
            if columns >= 110 { #expect(logRow <= 2) } else { #expect(logRow > 8) }
        }
        let tiny = ScreenRenderer.render(controller, rows: 6, columns: 20)
        #expect(tiny.text.contains("at least"))
    }

    @Test("an observer sees the same screen, marked read-only, and its keys send nothing")
    func observer() {
        let view = Views.auth([Views.screen("signin", owner: "auth", title: "Sign in")])
        let (canvas, controller) = Self.render(view, rows: 24, columns: 80, readOnly: true)
        Self.expectShows(canvas, "observing", "[ Log in ]")
        for _ in 0..<2 { _ = controller.handle(.tab) }
        #expect(controller.handle(.enter) == [])
        #expect(controller.notice.contains("read-only"))
    }

    @Test("a refused intent shows why; a stale one says another client acted first")
    func refusal() throws {
        let view = Views.auth([Views.screen("signin", owner: "auth", title: "Sign in")])
        let controller = ClientController(view: view)
        for _ in 0..<2 { _ = controller.handle(.tab) }
        #expect(controller.handle(.enter) == [.send(action: "logIn", fields: ["email": "", "password": ""])])
        #expect(controller.busy)
        #expect(controller.handle(.enter) == [], "a second action went out while the first was in flight")
        var intent = Flowbus_V1_Intent()
        intent.action = "logIn"
        intent.screenVersion = 2
        var reply = Flowbus_V1_IntentReply()
        reply.error.code = .staleIntent
        reply.error.message = "the screen is at v3"
        controller.finished(IntentOutcome(prepared: PreparedIntent(route: .viewModel(kind: "signin"), intent: intent, idempotencyKey: "k"), reply: reply))
        let canvas = ScreenRenderer.render(controller, rows: 24, columns: 80)
        Self.expectShows(canvas, "logIn was not applied", "The screen changed before this action arrived")
        #expect(!controller.busy)
    }

    @Test("long content scrolls to keep the focus visible")
    func scrolling() {
        var view = Views.main(selected: "home", screens: [Views.screen("home", owner: "home", title: "Home")])
        view.states["home"] = Views.state("home", .success, data: Views.homeFeed)
        let (canvas, _) = Self.render(view, rows: 12, columns: 80, keys: [.tab, .tab, .tab])
        Self.expectShows(canvas, "Latest episodes", "Pilot, part two", "↑ more")
    }

    @Test("key notation: names, control keys, literal text; an unknown name is an error that lists the names")
    func keyNotation() throws {
        #expect(try Key.parse("ab<Tab><S-Tab><Enter><Esc><BS><Up><Space><C-c><lt>") ==
                [.character("a"), .character("b"), .tab, .backTab, .enter, .escape, .backspace, .up, .character(" "), .control("c"), .character("<")])
        #expect(throws: KeyNotationError.self) { try Key.parse("<Nope>") }
        do { _ = try Key.parse("x<Nope>") } catch { #expect(error.description.contains("<Tab>")) }
    }
}
