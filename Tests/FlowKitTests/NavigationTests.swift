import FlowKit
import FlowProtocol
import Testing

@Suite("Navigation reducer")
struct NavigationTests {
    let signIn = Screen.make("signin", owner: "auth")
    let signUp = Screen.make("signup", owner: "signup")
    let details = Screen.make("details", id: "details-movie-1", owner: "home", params: ["item": "movie:1"])

    func tabs() -> Navigation {
        var navigation = Navigation()
        _ = try! navigation.apply([.setRootTabs([
            ("home", [.make("home", owner: "home")]), ("likes", [.make("likes", owner: "main")]),
        ], selected: "home")])
        return navigation
    }

    @Test func setRootPushPopAndPopTo() throws {
        var navigation = Navigation()
        #expect(try navigation.apply([.setRoot([signIn])]))
        #expect(navigation.topScreen?.kind == "signin")
        #expect(try navigation.apply([.push(signUp)]))
        #expect(try navigation.apply([.push(details)]))
        #expect(navigation.stacks[0].screens.map(\.kind) == ["signin", "signup", "details"])
        #expect(try navigation.apply([.pop()]))
        #expect(navigation.topScreen?.kind == "signup")
        #expect(try navigation.apply([.popTo("signin")]))
        #expect(navigation.stacks[0].screens.map(\.kind) == ["signin"])
    }

    @Test func pushingTheSameScreenIdTwiceChangesNothing() throws {
        var navigation = Navigation()
        _ = try navigation.apply([.setRoot([signIn]), .push(details)])
        let before = navigation
        #expect(try navigation.apply([.push(details)]) == false)
        #expect(navigation == before)
    }

    @Test func popOfTheFirstScreenIsRefusedAndLeavesTheValueAlone() throws {
        var navigation = Navigation()
        _ = try navigation.apply([.setRoot([signIn])])
        let before = navigation
        #expect(throws: NavigationError.self) { try navigation.apply([.pop()]) }
        #expect(navigation == before)
        // A batch is all or nothing.
        #expect(throws: NavigationError.self) { try navigation.apply([.push(signUp), .popTo("nowhere")]) }
        #expect(navigation == before)
    }

    @Test func tabsKeepTheirOwnStacks() throws {
        var navigation = tabs()
        _ = try navigation.apply([.push(details, tab: "home")])
        _ = try navigation.apply([.selectTab("likes")])
        #expect(navigation.topScreen?.kind == "likes")
        _ = try navigation.apply([.push(Screen.make("details", id: "details-actor-2", owner: "main"))])
        #expect(navigation.stacks.map { $0.screens.count } == [2, 2])
        _ = try navigation.apply([.selectTab("home")])
        #expect(navigation.topScreen?.id == "details-movie-1")
        #expect(throws: NavigationError.self) { try navigation.apply([.selectTab("nope")]) }
        _ = try navigation.apply([.popToRoot(tab: "home")])
        #expect(navigation.stacks[0].screens.map(\.kind) == ["home"])
    }

    /// Issue 17: pressing the tab already shown did nothing; it goes back to its first screen.
    @Test func selectingTheTabShownGoesBackToItsFirstScreen() throws {
        var navigation = tabs()
        #expect(navigation.selecting(tab: "home") == [.selectTab("home")], "already at its first screen")
        _ = try navigation.apply([.push(details, tab: "home")])
        #expect(navigation.selecting(tab: "likes") == [.selectTab("likes")])
        #expect(navigation.selecting(tab: "home") == [.popToRoot(tab: "home")])
        _ = try navigation.apply(navigation.selecting(tab: "home"))
        #expect(navigation.stacks[0].screens.map(\.kind) == ["home"] && navigation.selectedTab == "home")
        // Under a modal, the tab is only selected: the modal is what the person sees.
        _ = try navigation.apply([.push(details, tab: "home"), .present(Screen.make("confirmation", owner: "expenses"))])
        #expect(navigation.selecting(tab: "home") == [.selectTab("home")])
    }

    @Test func modalSitsOnTopUntilDismissed() throws {
        var navigation = tabs()
        let confirmation = Screen.make("confirmation", owner: "expenses", params: ["text": "ok"])
        _ = try navigation.apply([.present(confirmation)])
        #expect(navigation.topScreen?.kind == "confirmation")
        #expect(navigation.allScreens.map(\.kind).contains("confirmation"))
        _ = try navigation.apply([.dismiss])
        #expect(navigation.topScreen?.kind == "home")
        #expect(!navigation.hasModal)
    }

    @Test func unknownOperationIsRefusedWithAClearMessage() {
        var navigation = tabs()
        var op = NavigationOp()
        op.kind = .unspecified
        #expect(throws: NavigationError.self) { try navigation.apply([op]) }
    }
}
