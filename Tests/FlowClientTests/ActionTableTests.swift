import FlowClient
import FlowProtocol
import Testing

@Suite("Action table")
struct ActionTableTests {
    static func screen(_ kind: String, owner: String) -> Flowbus_V1_Screen {
        var screen = Flowbus_V1_Screen()
        screen.kind = kind
        screen.id = kind
        screen.owner = owner
        return screen
    }

    @Test(arguments: [
        ("signin", "auth", "logIn", "vm.signin"),
        ("signin", "auth", "register", "coord.auth"),
        ("signin", "auth", "forgotPassword", "coord.auth"),
        ("signin", "auth", "verifyEmail", "coord.auth"),
        ("signin", "auth", "back", "coord.app"),
        ("signup", "signup", "appear", "vm.signup"),
        ("signup", "signup", "signUp", "vm.signup"),
        ("emailverification", "signup", "verify", "vm.emailverification"),
        ("emailverification", "signup", "resend", "vm.emailverification"),
        ("forgotpassword", "auth", "send", "vm.forgotpassword"),
        ("home", "home", "select", "coord.home"),
        ("home", "home", "selectTab", "coord.app"),
        ("details", "home", "like", "vm.details"),
        ("details", "home", "markWatched", "vm.details"),
        ("details", "main", "select", "coord.main"),
        ("likes", "main", "select", "coord.main"),
        ("settings", "settings", "changePassword", "coord.settings"),
        ("settings", "settings", "logOut", "vm.settings"),
        ("changepassword", "settings", "change", "vm.changepassword"),
        ("expenses", "expenses", "adicionar", "vm.expenses"),
        ("expenses", "expenses", "registrar", "vm.expenses"),
        ("confirmation", "expenses", "ok", "coord.app"),
    ])
    func routesEachActionToItsService(kind: String, owner: String, action: String, service: String) throws {
        #expect(try ActionTable.route(action, on: Self.screen(kind, owner: owner)).service == service)
    }

    @Test func anActionTheScreenDoesNotHaveIsRefusedNamingTheActionsItHas() {
        #expect {
            try ActionTable.route("logOut", on: Self.screen("signin", owner: "auth"))
        } throws: { error in
            let text = "\(error)"
            return text.contains("\"logOut\"") && text.contains("signin") && text.contains("logIn, register")
        }
    }

    @Test func aNavigationActionOnAScreenWithoutOwnerGoesToTheAppCoordinator() throws {
        #expect(try ActionTable.route("select", on: Self.screen("likes", owner: "")).service == "coord.app")
    }
}
