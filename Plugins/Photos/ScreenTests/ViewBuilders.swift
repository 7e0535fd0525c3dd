@testable import FlowClient
import FlowKit
import FlowProtocol
import Foundation
import PhotosApp

/// Session views of the Photos app as the bus would deliver them, built from the app's own
/// screens and view models, for rendering tests.
enum Views {
    /// A screen as its owner's runtime publishes it: with the navigation actions its owner declares.
    static func published(_ screen: Flowbus_V1_Screen) -> Flowbus_V1_Screen {
        var screen = screen
        screen.actions = (PhotosCoordinators.all[screen.owner]?.screenActions[screen.kind] ?? [])
            .map { $0.wire(service: "coord.\(screen.owner)", handler: .coordinator) }
        return screen
    }

    /// The app's view models over in-memory services (presentations call no service); read-only after first use.
    nonisolated(unsafe) static let viewModels = PhotosViewModels.factories(
        services: PhotosServices.inMemory(catalog: try! PhotoCatalog.bundled(), hashIterations: 1))

    static func stack(_ screens: [Flowbus_V1_Screen], tab: String = "") -> Flowbus_V1_Navigation.Stack {
        var stack = Flowbus_V1_Navigation.Stack()
        stack.tab = tab
        stack.screens = screens.map(published)
        return stack
    }

    /// The Authentication flow: one stack, Welcome at its root.
    static func authentication(_ screens: [Flowbus_V1_Screen], modal: Flowbus_V1_Screen? = nil, version: UInt64 = 3) -> SessionView {
        var navigation = Flowbus_V1_Navigation()
        navigation.root = .stack
        navigation.stacks = [stack([PhotosScreens.welcome()] + screens)]
        if let modal { navigation.modal = published(modal) }
        navigation.version = version
        navigation.actions = SessionActions.offered(by: navigation)
        return withFirstStates(navigation)
    }

    /// A signed-in session: the three tabs, `selected` showing `screens` above its root.
    static func browse(selected: String, screens: [Flowbus_V1_Screen] = [], version: UInt64 = 9) -> SessionView {
        let roots = ["browse": PhotosScreens.browse(), "likes": PhotosScreens.likes(), "profile": PhotosScreens.profile()]
        var navigation = Flowbus_V1_Navigation()
        navigation.root = .tabs
        navigation.stacks = PhotosScreens.tabs.map { tab in stack([roots[tab]!] + (tab == selected ? screens : []), tab: tab) }
        navigation.selectedTab = selected
        navigation.version = version
        navigation.actions = SessionActions.offered(by: navigation)
        return withFirstStates(navigation)
    }

    /// The view with, for every screen of a view model, the first state it publishes (`none`,
    /// with its presentation and actions); tests set the states they need over it.
    static func withFirstStates(_ navigation: Flowbus_V1_Navigation) -> SessionView {
        var view = SessionView(session: "s-test")
        view.navigation = navigation
        for screen in navigation.allScreens where viewModels[screen.kind] != nil {
            view.states[screen.kind] = state(screen.kind, .none, version: 1, screenID: screen.id, params: screen.params)
        }
        return view
    }

    /// The state `kind`'s view model publishes in `phase` showing `payload`: with its presentation
    /// and actions, made by the app's own view model.
    static func state(_ kind: String, _ phase: Flowbus_V1_ViewState.Phase, payload: ScreenPayload? = nil, message: String = "",
                      version: UInt64 = 2, screenID: String? = nil, params: [String: String] = [:]) -> ScreenState {
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
            state.notice = payload.notice?.code ?? ""
        }
        state.presentation = viewModel.presentation()
        state.actions = viewModel.offeredActions()
        return ScreenState(kind: kind, state: state, writer: "vm-\(kind)", incarnation: 1, sequence: 10)
    }

    /// The bundled catalog's photos as the service answers them, with `liked` liked by the user.
    static func photos(liked: Set<String> = []) -> [Photos_V1_Photo] {
        let catalog = try! PhotoCatalog.bundled()
        return catalog.photos.map { entry in
            var photo = catalog.message(for: entry)
            if liked.contains(photo.id) {
                photo.liked = true
                photo.likes += 1
            }
            return photo
        }
    }

    static func list(_ photos: [Photos_V1_Photo]) -> ScreenPayload {
        var list = Photos_V1_PhotoList()
        list.photos = photos
        return ScreenPayload(list)
    }

    static var demoAccount: ScreenPayload {
        var account = Photos_V1_Account()
        account.name = "Demo Photographer"
        account.email = "demo@photos.dev"
        return ScreenPayload(account)
    }
}
