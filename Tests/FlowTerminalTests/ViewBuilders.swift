@testable import FlowClient
import FlowKit
import FlowProtocol
import Foundation

/// Session views as the bus would deliver them, built by hand for rendering tests.
enum Views {
    static func screen(_ kind: String, id: String? = nil, owner: String = "app", title: String, params: [String: String] = [:]) -> Flowbus_V1_Screen {
        .make(kind, id: id, owner: owner, title: title, params: params)
    }

    static func stack(_ screens: [Flowbus_V1_Screen], tab: String = "") -> Flowbus_V1_Navigation.Stack {
        var stack = Flowbus_V1_Navigation.Stack()
        stack.tab = tab
        stack.screens = screens
        return stack
    }

    /// A single-stack session (the Auth flow).
    static func auth(_ screens: [Flowbus_V1_Screen], modal: Flowbus_V1_Screen? = nil, version: UInt64 = 3) -> SessionView {
        var navigation = Flowbus_V1_Navigation()
        navigation.root = .stack
        navigation.stacks = [stack(screens)]
        if let modal { navigation.modal = modal }
        navigation.version = version
        var view = SessionView(session: "s-test")
        view.navigation = navigation
        return view
    }

    static let tabs = ["home", "likes", "settings", "expenses"]

    /// A signed-in session: four tabs, `selected` showing `screens` on its stack.
    static func main(selected: String, screens: [Flowbus_V1_Screen], modal: Flowbus_V1_Screen? = nil, version: UInt64 = 9) -> SessionView {
        var navigation = Flowbus_V1_Navigation()
        navigation.root = .tabs
        navigation.stacks = tabs.map { tab in
            tab == selected ? stack(screens, tab: tab) : stack([screen(tab, title: tab.capitalized)], tab: tab)
        }
        navigation.selectedTab = selected
        if let modal { navigation.modal = modal }
        navigation.version = version
        var view = SessionView(session: "s-test")
        view.navigation = navigation
        return view
    }

    static func state(_ kind: String, _ phase: Flowbus_V1_ViewState.Phase, data: Flowbus_V1_ScreenData? = nil,
                      message: String = "", version: UInt64 = 2, screenID: String = "") -> ScreenState {
        var state = Flowbus_V1_ViewState()
        state.phase = phase
        state.message = message
        state.screenVersion = version
        state.screenID = screenID
        if let data {
            state.payload = (try? data.serializedData()) ?? Data()
            state.payloadKind = "flowbus.v1.ScreenData"
        }
        return ScreenState(kind: kind, state: state, data: data, writer: "vm-\(kind)", incarnation: 1, sequence: 10)
    }

    static func item(_ id: String, _ title: String, subtitle: String = "") -> Flowbus_V1_Item {
        var item = Flowbus_V1_Item()
        item.id = id
        item.kind = String(id.split(separator: ":")[0])
        item.title = title
        item.subtitle = subtitle
        return item
    }

    static var genres: Flowbus_V1_ScreenData {
        var data = Flowbus_V1_ScreenData()
        var list = Flowbus_V1_GenreList()
        list.genres = [("drama", "Drama"), ("comedy", "Comédia"), ("action", "Ação"), ("horror", "Terror"), ("scifi", "Ficção científica"),
                       ("romance", "Romance"), ("animation", "Animação"), ("documentary", "Documentário")].map { id, name in
            var genre = Flowbus_V1_Genre()
            genre.id = id
            genre.name = name
            return genre
        }
        data.genres = list
        return data
    }

    static var homeFeed: Flowbus_V1_ScreenData {
        var feed = Flowbus_V1_HomeFeed()
        let titles: [(String, String, [Flowbus_V1_Item])] = [
            ("nowPlaying", "Now playing", (1...8).map { item("movie:\($0)", "Movie number \($0)", subtitle: "20\(10 + $0)") }),
            ("upcoming", "Upcoming", [item("movie:20", "The Long Road"), item("movie:21", "Night Train")]),
            ("popularActors", "Popular actors", [item("actor:1", "Fernanda Montenegro"), item("actor:2", "Wagner Moura")]),
            ("recentlyWatched", "Recently watched", []),
            ("latestEpisodes", "Latest episodes", [item("episode:1-1-2", "Pilot, part two", subtitle: "S1 E2")]),
        ]
        feed.carousels = titles.map { id, title, items in
            var carousel = Flowbus_V1_Carousel()
            carousel.id = id
            carousel.title = title
            carousel.items = items
            return carousel
        }
        var data = Flowbus_V1_ScreenData()
        data.home = feed
        return data
    }

    static func details(actor: Bool, liked: Bool = false) -> Flowbus_V1_ScreenData {
        var details = Flowbus_V1_Details()
        if actor {
            details.item = item("actor:1", "Fernanda Montenegro")
            details.synopsis = "Brazilian actress of stage and screen."
            details.filmography = [item("movie:19", "Central do Brasil", subtitle: "1998"), item("movie:3", "O Auto da Compadecida", subtitle: "2000")]
        } else {
            details.item = item("movie:19", "Central do Brasil")
            details.year = 1998
            details.genres = ["Drama"]
            details.synopsis = "A former schoolteacher who writes letters for illiterate people helps a boy look for his father."
            details.cast = [item("actor:1", "Fernanda Montenegro", subtitle: "Dora"), item("actor:4", "Vinícius de Oliveira", subtitle: "Josué")]
            details.liked = liked
        }
        var data = Flowbus_V1_ScreenData()
        data.details = details
        return data
    }

    static func report(_ expenses: [(String, String, String, Int64)]) -> Flowbus_V1_ScreenData {
        var report = Flowbus_V1_ExpenseReport()
        report.id = "r-1"
        report.criadoEm = "23/11/2026"
        report.expenses = expenses.map { titulo, tipo, texto, centavos in
            var expense = Flowbus_V1_Expense()
            expense.titulo = titulo
            expense.tipo = tipo
            expense.tipoTexto = tipo == "1" ? "Eletrônicos" : "Escritório"
            expense.valorCentavos = centavos
            expense.valorTexto = texto
            return expense
        }
        let total = expenses.reduce(0) { $0 + $1.3 }
        report.totalCentavos = total
        report.totalTexto = total == 170_000 ? "R$ 1.700,00" : total == 0 ? "R$ 0,00" : "R$ ?"
        report.podeRegistrar = total > 0
        var data = Flowbus_V1_ScreenData()
        data.report = report
        return data
    }

    static var account: Flowbus_V1_ScreenData {
        var account = Flowbus_V1_Account()
        account.email = "demo@flowbus.dev"
        account.name = "Demo User"
        account.nickname = "demo"
        account.genres = ["drama", "comedy"]
        account.verified = true
        var data = Flowbus_V1_ScreenData()
        data.account = account
        return data
    }
}
