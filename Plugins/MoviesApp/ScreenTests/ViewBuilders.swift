@testable import FlowClient
import FlowKit
import FlowProtocol
import Foundation
import MoviesApp

/// Session views as the bus would deliver them, built by hand for rendering tests.
enum Views {
    /// A screen as its owner's runtime publishes it: with the navigation actions its owner declares.
    static func screen(_ kind: String, id: String? = nil, owner: String = "app", title: String, params: [String: String] = [:]) -> Flowbus_V1_Screen {
        if kind == "confirmation" { return AppScreens.confirmation(params["text"] ?? "", owner: owner) }
        var screen = Flowbus_V1_Screen.make(kind, id: id, owner: owner, title: title, params: params)
        screen.actions = (AppCoordinators.all[owner]?.screenActions[kind] ?? []).map { $0.wire(service: "coord.\(owner)", handler: .coordinator) }
        return screen
    }

    /// The app's view models over in-memory services (presentations call no service); read-only after first use.
    nonisolated(unsafe) static let viewModels = AppViewModels.factories(
        services: AppServices.inMemory(catalog: try! Catalog.bundled(), hashIterations: 1))

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
        navigation.actions = SessionActions.offered(by: navigation)
        return withFirstStates(navigation)
    }

    /// The view with, for every screen of a view model, the state it published on appear
    /// (`none`, with its presentation and actions); tests set the states they need over it.
    static func withFirstStates(_ navigation: Flowbus_V1_Navigation) -> SessionView {
        var view = SessionView(session: "s-test")
        view.navigation = navigation
        for screen in navigation.allScreens where viewModels[screen.kind] != nil {
            view.states[screen.kind] = state(screen.kind, .none, version: 1, screenID: screen.id, params: screen.params)
        }
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
        navigation.actions = SessionActions.offered(by: navigation)
        return withFirstStates(navigation)
    }

    /// The state `kind`'s view model publishes in `phase` showing `data`: with its presentation
    /// and actions, made by the app's own view model.
    static func state(_ kind: String, _ phase: Flowbus_V1_ViewState.Phase, data: Movies_V1_ScreenData? = nil, notice: String = "",
                      message: String = "", version: UInt64 = 2, screenID: String? = nil, params: [String: String] = [:]) -> ScreenState {
        let payload = data.map { ScreenPayload($0, notice: notice.isEmpty ? nil : Notice(notice)) }
        let viewModel = viewModels[kind]!("s-test")
        viewModel.screenParams = params
        let viewModelState: ViewModelState = switch phase {
        case .loading: .loading
        case .success: .success(payload ?? ScreenPayload())
        case .error: .error(message)
        default: .none
        }
        viewModel.restore(state: viewModelState, data: payload)
        var state = Flowbus_V1_ViewState()
        state.phase = phase
        state.message = message
        state.screenVersion = version
        state.screenID = screenID ?? kind  // a screen's id defaults to its kind
        if let payload {
            state.payload = payload.bytes
            state.payloadKind = payload.kind
            state.notice = notice
        }
        state.presentation = viewModel.presentation()
        state.actions = viewModel.offeredActions()
        return ScreenState(kind: kind, state: state, writer: "vm-\(kind)", incarnation: 1, sequence: 10)
    }

    static func item(_ id: String, _ title: String, subtitle: String = "") -> Movies_V1_Item {
        var item = Movies_V1_Item()
        item.id = id
        item.kind = String(id.split(separator: ":")[0])
        item.title = title
        item.subtitle = subtitle
        return item
    }

    static var genres: Movies_V1_ScreenData {
        var data = Movies_V1_ScreenData()
        var list = Movies_V1_GenreList()
        list.genres = [("drama", "Drama"), ("comedy", "Comédia"), ("action", "Ação"), ("horror", "Terror"), ("scifi", "Ficção científica"),
                       ("romance", "Romance"), ("animation", "Animação"), ("documentary", "Documentário")].map { id, name in
            var genre = Movies_V1_Genre()
            genre.id = id
            genre.name = name
            return genre
        }
        data.genres = list
        return data
    }

    static var homeFeed: Movies_V1_ScreenData {
        var feed = Movies_V1_HomeFeed()
        let titles: [(String, String, [Movies_V1_Item])] = [
            ("nowPlaying", "Now playing", (1...8).map { item("movie:\($0)", "Movie number \($0)", subtitle: "20\(10 + $0)") }),
            ("upcoming", "Upcoming", [item("movie:20", "The Long Road"), item("movie:21", "Night Train")]),
            ("popularActors", "Popular actors", [item("actor:1", "Fernanda Montenegro"), item("actor:2", "Wagner Moura")]),
            ("recentlyWatched", "Recently watched", []),
            ("latestEpisodes", "Latest episodes", [item("episode:1-1-2", "Pilot, part two", subtitle: "S1 E2")]),
        ]
        feed.carousels = titles.map { id, title, items in
            var carousel = Movies_V1_Carousel()
            carousel.id = id
            carousel.title = title
            carousel.items = items
            return carousel
        }
        var data = Movies_V1_ScreenData()
        data.home = feed
        return data
    }

    static func details(actor: Bool, liked: Bool = false) -> Movies_V1_ScreenData {
        var details = Movies_V1_Details()
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
        var data = Movies_V1_ScreenData()
        data.details = details
        return data
    }

    static func report(_ expenses: [(String, String, String, Int64)]) -> Movies_V1_ScreenData {
        var report = Movies_V1_ExpenseReport()
        report.id = "r-1"
        report.criadoEm = "23/11/2026"
        report.expenses = expenses.map { titulo, tipo, texto, centavos in
            var expense = Movies_V1_Expense()
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
        var data = Movies_V1_ScreenData()
        data.report = report
        return data
    }

    static var account: Movies_V1_ScreenData {
        var account = Movies_V1_Account()
        account.email = "demo@flowbus.dev"
        account.name = "Demo User"
        account.nickname = "demo"
        account.genres = ["drama", "comedy"]
        account.verified = true
        var data = Movies_V1_ScreenData()
        data.account = account
        return data
    }
}
