import FlowKit
import FlowProtocol
import MoviesApp
import Testing

/// Which navigation follows which state, decided by each coordinator with no process around it.
@Suite("Coordinator decisions")
struct CoordinatorDecisionTests {
    func success(_ code: String, email: String = "ana@example.com", text: String = "") -> ViewModelState {
        var data = Movies_V1_ScreenData()
        data.account.email = email
        return .success(ScreenPayload(data, notice: Notice(code, text)))
    }

    /// The change a coordinator watching `screen` receives for `state`.
    func change(_ screen: String, _ state: ViewModelState) -> ScreenChange {
        var payload: ScreenPayload?
        if case .success(let shown) = state { payload = shown }
        return ScreenChange(screen: screen, state: state, payload: payload, screenID: screen)
    }

    @Test func appStartsAuthThenMainThenAuthAgain() throws {
        let app = AppCoordinator(session: "s1", parent: "")
        app.start()
        #expect(app.effects == [.startChild("auth", [:])])
        #expect(app.children == ["auth"])

        _ = try app.handle(call: "userDidSuccessfullyAuthenticate", args: ["user": "ana@example.com"])
        #expect(app.effects.suffix(2) == [.finishChild("auth"), .startChild("main", [:])])
        #expect(app.children == ["main"])
        #expect(app.context["user"] == "ana@example.com")

        // A duplicated report changes nothing.
        let count = app.effects.count
        _ = try app.handle(call: "userDidSuccessfullyAuthenticate", args: ["user": "ana@example.com"])
        #expect(app.effects.count == count)

        _ = try app.handle(call: "userDidLogOut", args: [:])
        #expect(app.effects.suffix(2) == [.finishChild("main"), .startChild("auth", [:])])
        #expect(app.children == ["auth"])
        #expect(app.context["user"] == "")
    }

    @Test func appStartsMainForASignedInSession() {
        let app = AppCoordinator(session: "s1", parent: "")
        app.context["user"] = "ana@example.com"
        app.start()
        #expect(app.effects == [.startChild("main", [:])])
    }

    @Test func authShowsSignInAndReportsASuccessfulSignIn() throws {
        let auth = AuthCoordinator(session: "s1", parent: "app")
        auth.start()
        #expect(auth.effects == [.navigate([.setRoot([AppScreens.signIn()])])])

        try auth.handle(intent: IntentInput(action: "register"))
        #expect(auth.effects.suffix(2) == [.startChild("signup", [:]), .navigate([.push(AppScreens.signUp())])])
        #expect(auth.children == ["signup"])

        try auth.handle(intent: IntentInput(action: "forgotPassword"))
        #expect(auth.effects.last == .navigate([.push(AppScreens.forgotPassword())]))

        auth.screenChanged(change("signin", success("signedIn")))
        #expect(auth.effects.last == .call(coordinator: "app", method: "userDidSuccessfullyAuthenticate", args: ["user": "ana@example.com"]))
    }

    @Test func authIgnoresErrorsAndLoading() {
        let auth = AuthCoordinator(session: "s1", parent: "app")
        auth.screenChanged(change("signin", .error("Invalid e-mail or password.")))
        auth.screenChanged(change("signin", .loading))
        #expect(auth.effects.isEmpty)
    }

    /// Issue 17, bug 10: the mailed code leads on to Choose a new password, then back to SignIn.
    @Test func forgotPasswordPopsToSignInOpensTheCodeScreenAndConfirms() {
        let auth = AuthCoordinator(session: "s1", parent: "app")
        auth.screenChanged(change("forgotpassword", success("resetSent", text: "Check your e-mail.")))
        #expect(auth.effects == [.navigate([
            .popTo("signin"), .push(AppScreens.resetPassword(email: "ana@example.com")),
            .present(AppScreens.confirmation("Check your e-mail.", owner: "auth")),
        ])])
        auth.screenChanged(change("resetpassword", success("passwordReset", text: "Log in with the new one.")))
        #expect(auth.effects.last == .navigate([.popTo("signin"), .present(AppScreens.confirmation("Log in with the new one.", owner: "auth"))]))
        auth.screenChanged(change("resetpassword", success("resetSent", text: "We mailed a new code.")))
        #expect(auth.effects.count == 2, "a new code keeps the screen where it is")
    }

    @Test func signUpPushesVerificationThenGoesHome() {
        let signUp = SignUpCoordinator(session: "s1", parent: "auth")
        signUp.screenChanged(change("signup", success("verificationSent")))
        #expect(signUp.effects == [.navigate([.push(AppScreens.emailVerification(email: "ana@example.com"))])])
        signUp.screenChanged(change("emailverification", success("verified")))
        #expect(signUp.effects.last == .call(coordinator: "auth", method: "goToHome", args: ["user": "ana@example.com"]))
    }

    @Test func authTurnsGoToHomeIntoAuthenticated() throws {
        let auth = AuthCoordinator(session: "s1", parent: "app")
        _ = try auth.handle(call: "goToHome", args: ["user": "ana@example.com"])
        #expect(auth.effects == [.call(coordinator: "app", method: "userDidSuccessfullyAuthenticate", args: ["user": "ana@example.com"])])
    }

    @Test func mainBuildsTheFourTabsAndOwnsTheirFlows() throws {
        let main = MainCoordinator(session: "s1", parent: "app")
        main.start()
        // The child flows start before the tabs show, so a Home screen never shows without its flow.
        #expect(main.effects.prefix(3) == [.startChild("home", [:]), .startChild("settings", [:]), .startChild("expenses", [:])])
        guard case .navigate(let ops) = main.effects.last, let op = ops.first else {
            Issue.record("Main must set the tabs after starting its flows")
            return
        }
        #expect(op.kind == .setRootTabs)
        #expect(op.tabs.map(\.tab) == AppScreens.tabs)
        #expect(op.target == "home")
        #expect(main.children == ["home", "settings", "expenses"])

        try main.handle(intent: IntentInput(action: "select", fields: ["item": "movie:3"]))
        #expect(main.effects.last == .navigate([.push(AppScreens.details(item: "movie:3", owner: "main"), tab: "likes")]))
        _ = try main.handle(call: "userDidLogOut", args: [:])
        #expect(main.effects.last == .call(coordinator: "app", method: "userDidLogOut", args: [:]))
    }

    @Test func homePushesDetailsAndRefusesAMalformedItem() throws {
        let home = HomeCoordinator(session: "s1", parent: "main")
        try home.handle(intent: IntentInput(action: "select", fields: ["item": "actor:7"]))
        try home.handle(intent: IntentInput(action: "select", fields: ["item": "movie:12"]))
        #expect(home.effects == [
            .navigate([.push(AppScreens.details(item: "actor:7", owner: "home"), tab: "home")]),
            .navigate([.push(AppScreens.details(item: "movie:12", owner: "home"), tab: "home")]),
        ])
        #expect(AppScreens.details(item: "movie:12", owner: "home").id == "details-movie-12")
        #expect(throws: IntentRefusal.self) { try home.handle(intent: IntentInput(action: "select", fields: ["item": "pizza"])) }
        #expect(throws: IntentRefusal.self) { try home.handle(intent: IntentInput(action: "dance")) }
    }

    @Test func settingsPushesChangePasswordAndReportsLogOut() throws {
        let settings = SettingsCoordinator(session: "s1", parent: "main")
        try settings.handle(intent: IntentInput(action: "changePassword"))
        #expect(settings.effects == [.navigate([.push(AppScreens.changePassword(), tab: "settings")])])
        settings.screenChanged(change("changepassword", success("passwordChanged", text: "Password changed.")))
        #expect(settings.effects.last == .navigate([
            .popTo("settings", tab: "settings"), .present(AppScreens.confirmation("Password changed.", owner: "settings")),
        ]))
        settings.screenChanged(change("settings", success("loggedOut")))
        #expect(settings.effects.last == .call(coordinator: "main", method: "userDidLogOut", args: [:]))
    }

    @Test func expensesConfirmsARegisteredReport() {
        let expenses = ExpensesCoordinator(session: "s1", parent: "main")
        expenses.screenChanged(change("expenses", success("expenseAdded")))
        #expect(expenses.effects.isEmpty)
        expenses.screenChanged(change("expenses", success("reportRegistered", text: "Relatório registrado.")))
        #expect(expenses.effects == [.navigate([.present(AppScreens.confirmation("Relatório registrado.", owner: "expenses"))])])
    }

    @Test func everyCoordinatorIsListedByName() {
        #expect(Set(AppCoordinators.all.keys) == ["app", "auth", "signup", "main", "home", "settings", "expenses"])
    }
}
