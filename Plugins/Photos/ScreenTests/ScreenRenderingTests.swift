@testable import FlowClient
import FlowKit
import FlowProtocol
@testable import FlowTerminal
import PhotosApp
import Testing

/// Every screen of the Photos app drawn by the generic terminal client (which knows no app) from
/// the presentations of the app's own view models and screens, at 80×24 and at 132×40.
@Suite("Photos screen rendering")
struct ScreenRenderingTests {
    static let sizes: [(rows: Int, columns: Int)] = [(24, 80), (40, 132)]

    static func render(_ view: SessionView, rows: Int, columns: Int, keys: [Key] = []) -> (Canvas, ClientController) {
        let controller = ClientController(view: view)
        for key in keys { _ = controller.handle(key) }
        return (ScreenRenderer.render(controller, rows: rows, columns: columns), controller)
    }

    static func typing(_ text: String) -> [Key] { text.map(Key.character) }

    /// Fails with the whole screen when `text` is not on it.
    static func expectShows(_ canvas: Canvas, _ texts: String..., sourceLocation: SourceLocation = #_sourceLocation) {
        for text in texts {
            #expect(canvas.text.contains(text), "\"\(text)\" is not on the \(canvas.columns)×\(canvas.rows) screen:\n\(canvas.text)", sourceLocation: sourceLocation)
        }
    }

    static func expectFits(_ canvas: Canvas, rows: Int, columns: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(canvas.lines.count == rows && canvas.lines.allSatisfy { $0.count <= columns }, sourceLocation: sourceLocation)
    }

    /// The role of the first cell of `text` on the screen.
    static func role(of text: String, in canvas: Canvas) -> CellRole? {
        guard let row = canvas.lines.firstIndex(where: { $0.contains(text) }), let range = canvas.lines[row].range(of: text) else { return nil }
        return canvas[row, canvas.lines[row].distance(from: canvas.lines[row].startIndex, to: range.lowerBound)].role
    }

    @Test("welcome: no view model, its own presentation, log in / create account / forgot password, no back", arguments: sizes)
    func welcome(size: (rows: Int, columns: Int)) {
        let view = Views.authentication([])
        let (canvas, controller) = Self.render(view, rows: size.rows, columns: size.columns)
        Self.expectShows(canvas, "Welcome to Photos", "photographers around the world", "[ Log in ]", "[ Create account ]", "[ Forgot password ]",
                         "session s-test", "nav v3")
        #expect(!canvas.text.contains("‹ Back"))
        #expect(!canvas.text.contains("Loading"))
        #expect(controller.handle(.enter) == [.send(action: "logIn", fields: [:])])
        Self.expectFits(canvas, rows: size.rows, columns: size.columns)
    }

    @Test("log in: e-mail, masked password, log in and forgot password, back", arguments: sizes)
    func logIn(size: (rows: Int, columns: Int)) {
        let view = Views.authentication([PhotosScreens.logIn()])
        let keys = Self.typing("demo@photos.dev") + [.tab] + Self.typing("photos123") + [.tab]
        let (canvas, controller) = Self.render(view, rows: size.rows, columns: size.columns, keys: keys)
        Self.expectShows(canvas, "Log in", "Log in to Photos.", "E-mail", "[demo@photos.dev", "Password", "•••••••••", "[ Log in ]",
                         "[ Forgot password ]", "‹ Back")
        #expect(!canvas.text.contains("photos123"), "the password shows in clear:\n\(canvas.text)")
        #expect(controller.handle(.enter) == [.send(action: "logIn", fields: ["email": "demo@photos.dev", "password": "photos123"])])
        Self.expectFits(canvas, rows: size.rows, columns: size.columns)
    }

    @Test("create account: four fields in order, the password hint, the button", arguments: sizes)
    func createAccount(size: (rows: Int, columns: Int)) {
        let view = Views.authentication([PhotosScreens.createAccount()])
        let keys = Self.typing("Rita Lee") + [.tab] + Self.typing("rita@photos.dev") + [.tab] + Self.typing("Secret123") + [.tab]
            + Self.typing("Secret123") + [.tab]
        let (canvas, controller) = Self.render(view, rows: size.rows, columns: size.columns, keys: keys)
        Self.expectShows(canvas, "Create account", "Name", "E-mail", "Password", "Confirm", "at least 8 characters", "[ Create account ]")
        let rows = ["Name", "E-mail", "Password", "Confirm"].compactMap { label in canvas.lines.firstIndex { $0.contains(label) } }
        #expect(rows == rows.sorted() && rows.count == 4, "the fields are not in the form's order:\n\(canvas.text)")
        #expect(controller.handle(.enter) == [.send(action: "createAccount", fields: [
            "name": "Rita Lee", "email": "rita@photos.dev", "password": "Secret123", "passwordConfirmation": "Secret123",
        ])])
    }

    @Test("forgot password, and its confirmation as a modal over log in", arguments: sizes)
    func forgotPassword(size: (rows: Int, columns: Int)) {
        let form = Views.authentication([PhotosScreens.logIn(), PhotosScreens.forgotPassword()])
        let (canvas, _) = Self.render(form, rows: size.rows, columns: size.columns)
        Self.expectShows(canvas, "Forgot password", "6-digit code", "E-mail", "[ Send code ]")
        let text = ForgotPasswordViewModel.sentText(to: "demo@photos.dev")
        let modal = Views.authentication([PhotosScreens.logIn()], modal: PhotosScreens.confirmation(text, owner: "authentication"))
        let (shown, controller) = Self.render(modal, rows: size.rows, columns: size.columns)
        Self.expectShows(shown, "Done", "If an account exists for", "demo@photos.dev", "6-digit code", "[ OK ]")
        #expect(shown.text.contains("┌"), "the modal has no box:\n\(shown.text)")
        #expect(controller.handle(.enter) == [.send(action: "ok", fields: [:])])
    }

    @Test("browse: the tab bar and the photos as a list of title, author and likes; Enter selects", arguments: sizes)
    func browse(size: (rows: Int, columns: Int)) {
        var view = Views.browse(selected: "browse")
        view.states["browse"] = Views.state("browse", .success, payload: Views.list(Views.photos()), screenID: "browse")
        let (canvas, controller) = Self.render(view, rows: size.rows, columns: size.columns, keys: [.down, .down])
        Self.expectShows(canvas, "Browse", "Photos", "Harbour lights at blue hour", "Tomás Herrera", "♥ 214", "Fresh snow on a quiet street",
                         "Yuki Tanabe", "♥ 389", "1 Browse", "2 Likes", "3 Profile")
        #expect(controller.handle(.enter) == [.send(action: "select", fields: ["photo": "photo:3"])])
        let tabRow = size.rows - 2
        #expect(canvas.lines[tabRow].contains("1 Browse"))
        #expect(canvas.columns(of: .focus, row: tabRow).count == " 1 Browse ".count)
        Self.expectFits(canvas, rows: size.rows, columns: size.columns)
    }

    @Test("photo: title, byline, description, tags, the likes, like disabled once liked, back", arguments: sizes)
    func photo(size: (rows: Int, columns: Int)) {
        let screen = PhotosScreens.photo("photo:2")
        var liked = Views.photos(liked: ["photo:2"])[1]
        var view = Views.browse(selected: "browse", screens: [screen])
        view.states["photo"] = Views.state("photo", .success, payload: ScreenPayload(liked), screenID: screen.id, params: screen.params)
        let (canvas, controller) = Self.render(view, rows: size.rows, columns: size.columns)
        Self.expectShows(canvas, "‹ Back", "Photo", "Fresh snow on a quiet street", "by Yuki Tanabe · Sapporo, Japan", "#snow #street",
                         "Likes: ♥ 390 · you like it", "[ ♡ Like ]", "[ Unlike ]")
        // The focus does not rest on Like, disabled once liked: it starts on Unlike.
        #expect(Self.role(of: "[ ♡ Like ]", in: canvas) == .disabled)
        // Like, chosen on purpose, sends nothing and says why.
        _ = controller.handle(.backTab)
        #expect(controller.handle(.enter) == [])
        #expect(controller.notice.contains("You already like this photo."))
        _ = controller.handle(.tab)
        #expect(controller.handle(.enter) == [.send(action: "unlike", fields: [:])])

        liked.liked = false
        liked.likes -= 1
        view.states["photo"] = Views.state("photo", .success, payload: ScreenPayload(liked), version: 4, screenID: screen.id, params: screen.params)
        let (notLiked, likeController) = Self.render(view, rows: size.rows, columns: size.columns)
        Self.expectShows(notLiked, "Likes: ♥ 389")
        #expect(!notLiked.text.contains("you like it"))
        #expect(Self.role(of: "[ Unlike ]", in: notLiked) == .disabled)
        #expect(likeController.handle(.enter) == [.send(action: "like", fields: [:])])
        Self.expectFits(canvas, rows: size.rows, columns: size.columns)
    }

    @Test("likes: the liked photos, or what to do when there are none", arguments: sizes)
    func likes(size: (rows: Int, columns: Int)) {
        var view = Views.browse(selected: "likes")
        view.states["likes"] = Views.state("likes", .success, payload: Views.list([Views.photos(liked: ["photo:3"])[2]]), screenID: "likes")
        let (canvas, controller) = Self.render(view, rows: size.rows, columns: size.columns)
        Self.expectShows(canvas, "Likes", "Liked photos", "Aurora over the fjord", "Elin Lindqvist", "♥ 1205")
        #expect(controller.handle(.enter) == [.send(action: "select", fields: ["photo": "photo:3"])])
        view.states["likes"] = Views.state("likes", .success, payload: Views.list([]), version: 3, screenID: "likes")
        let (empty, _) = Self.render(view, rows: size.rows, columns: size.columns)
        Self.expectShows(empty, "No liked photos yet")
    }

    @Test("profile: name, e-mail and log out", arguments: sizes)
    func profile(size: (rows: Int, columns: Int)) {
        var view = Views.browse(selected: "profile")
        view.states["profile"] = Views.state("profile", .success, payload: Views.demoAccount, screenID: "profile")
        let (canvas, controller) = Self.render(view, rows: size.rows, columns: size.columns)
        Self.expectShows(canvas, "Profile", "Demo Photographer", "demo@photos.dev", "[ Log out ]", "3 Profile")
        #expect(controller.handle(.enter) == [.send(action: "logOut", fields: [:])])
    }

    @Test("loading shows a spinner and disables the buttons; an error is an alert with the view model's message", arguments: sizes)
    func loadingAndError(size: (rows: Int, columns: Int)) {
        var view = Views.authentication([PhotosScreens.logIn()])
        view.states["login"] = Views.state("login", .loading, version: 3, screenID: "login")
        let (loading, _) = Self.render(view, rows: size.rows, columns: size.columns)
        Self.expectShows(loading, "loading")
        #expect(Self.role(of: "[ Log in ]", in: loading) == .disabled)

        view.states["login"] = Views.state("login", .error, message: LoginViewModel.invalidCredentials, version: 4, screenID: "login")
        let (canvas, controller) = Self.render(view, rows: size.rows, columns: size.columns)
        Self.expectShows(canvas, "Error", "Invalid e-mail or password.", "[ OK ]")
        #expect(controller.handle(.enter) == [])
        let after = ScreenRenderer.render(controller, rows: size.rows, columns: size.columns)
        #expect(!after.text.contains("Invalid e-mail or password."), "the alert stayed after OK:\n\(after.text)")
    }

    @Test("before the feed loads, Browse says so")
    func browseLoading() {
        var view = Views.browse(selected: "browse")
        view.states["browse"] = Views.state("browse", .loading, version: 2, screenID: "browse")
        let (canvas, _) = Self.render(view, rows: 24, columns: 80)
        Self.expectShows(canvas, "Loading the photos…")
    }
}
