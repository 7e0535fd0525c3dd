@testable import FlowClient
import FlowProtocol
import Testing

/// Routing by what the screen publishes: its view model's actions, its owner's, the session's.
@Suite("Offered actions")
struct OfferedActionsTests {
    static func view(stateFor screenID: String = "signin") -> SessionView {
        var navigation = BusFixture.stack([BusFixture.screen("signin", owner: "auth", actions: ["register", "forgotPassword"])], version: 4)
        navigation.actions.append(BusFixture.action("ok", service: "coord.app", handler: .coordinator))
        var state = Flowbus_V1_ViewState()
        state.screenVersion = 9
        state.screenID = screenID
        state.actions = [BusFixture.action("logIn", service: "vm.signin", handler: .viewModel, fields: ["email", "password"])]
        var view = SessionView(session: "s1")
        view.navigation = navigation
        view.states["signin"] = ScreenState(kind: "signin", state: state, writer: "vm-signin", incarnation: 1, sequence: 3)
        return view
    }

    @Test(arguments: [
        ("logIn", "vm.signin", UInt64(9)),
        ("register", "coord.auth", UInt64(4)),
        ("forgotPassword", "coord.auth", UInt64(4)),
        ("back", "coord.app", UInt64(4)),
        ("ok", "coord.app", UInt64(4)),
    ])
    func eachActionGoesWhereTheScreenSaysWithTheVersionItWasMadeOn(action: String, service: String, version: UInt64) throws {
        let prepared = try SessionClient.prepare(action: action, fields: [:], route: nil, in: Self.view(), key: "k")
        #expect(prepared.route.service == service)
        #expect(prepared.version == version)
        #expect(prepared.intent.screen == "signin" && prepared.intent.screenID == "signin")
    }

    @Test func anActionTheScreenDoesNotOfferIsRefusedNamingWhatItOffers() {
        #expect {
            try SessionClient.prepare(action: "logOut", fields: [:], route: nil, in: Self.view(), key: "k")
        } throws: { error in
            let text = "\(error)"
            return text.contains("\"logOut\"") && text.contains("logIn, register, forgotPassword, back, ok")
        }
    }

    @Test func aStateOfAnotherScreenOfTheKindOffersNothing() {
        let view = Self.view(stateFor: "signin-2")
        #expect(view.action(named: "logIn") == nil)
        #expect(view.action(named: "register")?.service == "coord.auth")
    }

    /// Sign-in left (a logIn) and came back (a logOut) under the same id: until its view model
    /// has the new `appear`, its state is the earlier appearance's, which a `reset` still on its
    /// way would wipe; the screen waits for its own, and offers the view model's actions then.
    @Test func aStateOfAnEarlierAppearanceOfTheTopScreenIsNotItsState() {
        var view = Self.view()
        view.navigation?.topAppearKey = "appear/s1/signin/13"
        view.states["signin"]?.state.appearKey = "appear/s1/signin/1"
        #expect(view.topState == nil)
        #expect(view.action(named: "logIn") == nil)
        #expect(view.action(named: "register")?.service == "coord.auth")
        view.states["signin"]?.state.appearKey = "appear/s1/signin/13"
        #expect(view.topState?.screenVersion == 9)
        #expect(view.action(named: "logIn")?.service == "vm.signin")
        // A state without the key (a view model that does not write it), or a screen shown
        // without an appear (a sheet dismissed from it), is taken as before.
        view.states["signin"]?.state.appearKey = ""
        #expect(view.topState != nil)
        view.states["signin"]?.state.appearKey = "appear/s1/signin/1"
        view.navigation?.topAppearKey = ""
        #expect(view.topState != nil)
    }

    @Test func aPublishedActionRoutesByItsServiceAndHandler() {
        #expect(ActionRoute(BusFixture.action("like", service: "vm.details", handler: .viewModel)) == .viewModel(kind: "details"))
        #expect(ActionRoute(BusFixture.action("select", service: "coord.home", handler: .coordinator)) == .coordinator(name: "home"))
        #expect(ActionRoute(BusFixture.action("x", service: "svc.users", handler: .viewModel)) == nil)
    }
}
