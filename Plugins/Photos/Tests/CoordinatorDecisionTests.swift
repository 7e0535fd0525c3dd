import FlowKit
import FlowProtocol
import PhotosApp
import Testing

/// Which navigation follows which state or action, decided by each coordinator with no process around it.
@Suite("Photos coordinator decisions")
struct CoordinatorDecisionTests {
    func success(_ code: String, email: String = "ana@example.com", text: String = "") -> ViewModelState {
        .success(ScreenPayload(makeAccount(email), notice: Notice(code, text)))
    }

    func change(_ screen: String, _ state: ViewModelState) -> ScreenChange {
        var payload: ScreenPayload?
        if case .success(let shown) = state { payload = shown }
        return ScreenChange(screen: screen, state: state, payload: payload, screenID: screen)
    }

    @Test func everyCoordinatorIsListedAndTheRootIsNamedApp() {
        #expect(Set(PhotosCoordinators.all.keys) == ["app", "authentication", "browse"])
        #expect(MainCoordinator.name == "app")
    }

    // MARK: Main (app)

    @Test func mainStartsAuthenticationThenBrowseThenAuthenticationAgain() throws {
        let main = MainCoordinator(session: "s1", parent: "")
        main.start()
        #expect(main.effects == [.startChild("authentication", [:])])
        #expect(main.children == ["authentication"])

        _ = try main.handle(call: "userDidSuccessfullyAuthenticate", args: ["user": "ana@example.com"])
        #expect(main.effects.suffix(2) == [.finishChild("authentication"), .startChild("browse", [:])])
        #expect(main.children == ["browse"])
        #expect(main.context["user"] == "ana@example.com")

        // A repeated report changes nothing.
        let count = main.effects.count
        _ = try main.handle(call: "userDidSuccessfullyAuthenticate", args: ["user": "ana@example.com"])
        #expect(main.effects.count == count)

        _ = try main.handle(call: "userDidLogOut", args: [:])
        #expect(main.effects.suffix(2) == [.finishChild("browse"), .startChild("authentication", [:])])
        #expect(main.children == ["authentication"], "no Browse instance is owned after log-out")
        #expect(main.context["user"] == "")
        _ = try main.handle(call: "userDidLogOut", args: [:])
        #expect(main.effects.count == count + 2)
    }

    @Test func mainStartsBrowseForASignedInSessionAndRefusesUnknownCalls() {
        let main = MainCoordinator(session: "s1", parent: "")
        main.context["user"] = "ana@example.com"
        main.start()
        #expect(main.effects == [.startChild("browse", [:])])
        #expect(throws: IntentRefusal.self) { _ = try main.handle(call: "goToHome", args: [:]) }
    }

    // MARK: Authentication

    @Test func authenticationShowsWelcomeWithItsOwnPresentationAndNoViewModel() throws {
        let auth = AuthenticationCoordinator(session: "s1", parent: "app")
        auth.start()
        #expect(auth.effects == [.navigate([.setRoot([PhotosScreens.welcome()])])])
        let welcome = PhotosScreens.welcome()
        #expect(welcome.viewModel.isEmpty)
        #expect(welcome.owner == "authentication")
        #expect(welcome.presentation.components.contains { if case .buttons(let buttons) = $0.component {
            buttons.buttons.map(\.action).starts(with: ["logIn", "createAccount"]) } else { false } })
        #expect(AuthenticationCoordinator.screenActions["welcome"]?.map(\.name).starts(with: ["logIn", "createAccount"]) == true)
        #expect(AuthenticationCoordinator.screenActions["login"]?.map(\.name) == ["forgotPassword"])
    }

    @Test func welcomePushesLogInAndCreateAccount() throws {
        let auth = AuthenticationCoordinator(session: "s1", parent: "app")
        try auth.handle(intent: IntentInput(action: "logIn", screenID: "welcome"))
        try auth.handle(intent: IntentInput(action: "createAccount", screenID: "welcome"))
        #expect(auth.effects == [.navigate([.push(PhotosScreens.logIn())]), .navigate([.push(PhotosScreens.createAccount())])])
        #expect(throws: IntentRefusal.self) { try auth.handle(intent: IntentInput(action: "select")) }
    }

    @Test func logInAndANewAccountEachReportAuthenticated() {
        let auth = AuthenticationCoordinator(session: "s1", parent: "app")
        auth.screenChanged(change("login", success("signedIn")))
        auth.screenChanged(change("createaccount", success("accountCreated", email: "rita@example.com")))
        #expect(auth.effects == [
            .call(coordinator: "app", method: "userDidSuccessfullyAuthenticate", args: ["user": "ana@example.com"]),
            .call(coordinator: "app", method: "userDidSuccessfullyAuthenticate", args: ["user": "rita@example.com"]),
        ])
    }

    @Test func errorsLoadingAndOtherNoticesDecideNothing() {
        let auth = AuthenticationCoordinator(session: "s1", parent: "app")
        auth.screenChanged(change("login", .error("Invalid e-mail or password.")))
        auth.screenChanged(change("login", .loading))
        auth.screenChanged(change("createaccount", .none))
        auth.screenChanged(change("forgotpassword", success("somethingElse")))
        #expect(auth.effects.isEmpty)
    }

    /// Issue 17, bug 10: the mailed code had no screen to be typed on; it leads on to Choose a
    /// new password, which goes back to Log in once the password is set.
    @Test func forgotPasswordFromLogInPopsToLogInOpensTheCodeScreenAndConfirms() throws {
        let auth = AuthenticationCoordinator(session: "s1", parent: "app")
        try auth.handle(intent: IntentInput(action: "forgotPassword", screenID: "login"))
        #expect(auth.effects == [.navigate([.push(PhotosScreens.forgotPassword())])])
        #expect(auth.context["forgotPasswordFrom"] == "login")
        auth.screenChanged(change("forgotpassword", success("resetSent", text: "We mailed a 6-digit code.")))
        #expect(auth.effects.last == .navigate([
            .popTo("login"), .push(PhotosScreens.resetPassword(email: "ana@example.com")),
            .present(PhotosScreens.confirmation("We mailed a 6-digit code.", owner: "authentication")),
        ]))
        auth.screenChanged(change("resetpassword", success("passwordReset", text: "Log in with the new one.")))
        #expect(auth.effects.last == .navigate([.popTo("login"), .present(PhotosScreens.confirmation("Log in with the new one.", owner: "authentication"))]))
    }

    @Test func forgotPasswordFromWelcomePopsToTheRootOpensTheCodeScreenAndConfirms() throws {
        let auth = AuthenticationCoordinator(session: "s1", parent: "app")
        try auth.handle(intent: IntentInput(action: "forgotPassword", screenID: "welcome"))
        auth.screenChanged(change("forgotpassword", success("resetSent", text: "Sent.")))
        #expect(auth.effects.last == .navigate([
            .popToRoot(), .push(PhotosScreens.resetPassword(email: "ana@example.com")),
            .present(PhotosScreens.confirmation("Sent.", owner: "authentication")),
        ]))
    }

    /// The navigation each decision makes, applied to real navigation values: popTo(LogIn) when
    /// LogIn is in the stack, popToRoot when it is not.
    @Test func theForgotPasswordDecisionsApplyToTheStacksTheyComeFrom() throws {
        for (from, stack, expected) in [
            ("login", [PhotosScreens.welcome(), PhotosScreens.logIn(), PhotosScreens.forgotPassword()], ["welcome", "login", "resetpassword"]),
            ("welcome", [PhotosScreens.welcome(), PhotosScreens.forgotPassword()], ["welcome", "resetpassword"]),
        ] {
            let auth = AuthenticationCoordinator(session: "s1", parent: "app")
            try auth.handle(intent: IntentInput(action: "forgotPassword", screenID: from))
            auth.screenChanged(change("forgotpassword", success("resetSent", text: "Sent.")))
            guard case .navigate(let ops) = auth.effects.last else { Issue.record("no navigation"); continue }
            var navigation = Navigation()
            _ = try navigation.apply([.setRoot(stack)])
            _ = try navigation.apply(ops)
            #expect(navigation.stacks.first?.screens.map(\.kind) == expected)
            #expect(navigation.modal.kind == "confirmation")
            #expect(navigation.modal.viewModel.isEmpty)
        }
    }

    // MARK: Browse

    @Test func browseSetsThreeTabsWithBrowseSelected() throws {
        let browse = BrowseCoordinator(session: "s1", parent: "app")
        browse.start()
        guard case .navigate(let ops) = browse.effects.first, let op = ops.first else {
            Issue.record("Browse must set its tabs when it starts")
            return
        }
        #expect(op.kind == .setRootTabs)
        #expect(op.tabs.map(\.tab) == PhotosScreens.tabs)
        #expect(op.tabs.map { $0.screens.map(\.kind) } == [["browse"], ["likes"], ["profile"]])
        #expect(op.target == "browse")
        #expect(op.tabs.flatMap(\.screens).allSatisfy { $0.owner == "browse" && $0.viewModel == "vm.\($0.kind)" })
    }

    @Test func selectPushesPhotoOnTheTabItWasMadeOnWithAnIdFromThePhoto() throws {
        let browse = BrowseCoordinator(session: "s1", parent: "app")
        try browse.handle(intent: IntentInput(action: "select", fields: ["photo": "photo:7"], screenID: "browse"))
        try browse.handle(intent: IntentInput(action: "select", fields: ["photo": "photo:7"], screenID: "likes"))
        #expect(browse.effects == [
            .navigate([.push(PhotosScreens.photo("photo:7"), tab: "browse")]),
            .navigate([.push(PhotosScreens.photo("photo:7"), tab: "likes")]),
        ])
        let screen = PhotosScreens.photo("photo:7")
        #expect(screen.id == "photo-7")
        #expect(screen.params == ["photo": "photo:7"])
        // A retried select pushes once: the same id is already on the stack.
        var navigation = Navigation()
        _ = try navigation.apply([.setRootTabs([("browse", [PhotosScreens.browse()]), ("likes", [PhotosScreens.likes()])], selected: "browse")])
        _ = try navigation.apply([.push(screen, tab: "browse")])
        #expect(try navigation.apply([.push(screen, tab: "browse")]) == false)
        #expect(navigation.stacks[0].screens.map(\.id) == ["browse", "photo-7"])
    }

    @Test(arguments: ["", "7", "photo:", "photo:x", "movie:7", "photo:7:1"])
    func selectRefusesSomethingThatIsNotAPhotoID(photo: String) {
        let browse = BrowseCoordinator(session: "s1", parent: "app")
        #expect(throws: IntentRefusal.self) { try browse.handle(intent: IntentInput(action: "select", fields: ["photo": photo], screenID: "browse")) }
        #expect(browse.effects.isEmpty)
    }

    @Test func loggingOutOnProfileReportsUserDidLogOut() {
        let browse = BrowseCoordinator(session: "s1", parent: "app")
        browse.screenChanged(change("profile", success("somethingElse")))
        browse.screenChanged(change("profile", .error("The account service is not available right now.")))
        #expect(browse.effects.isEmpty)
        browse.screenChanged(change("profile", success("loggedOut")))
        #expect(browse.effects == [.call(coordinator: "app", method: "userDidLogOut", args: [:])])
    }
}
