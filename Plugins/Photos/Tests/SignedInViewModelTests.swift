import FlowKit
import FlowProtocol
import PhotosApp
import Testing

/// Browse, Photo, Likes and Profile against mock services: what each loads on appear, what it
/// shows, and what a person can do on it.
@Suite struct SignedInViewModelTests {
    let accounts = MockAccountService()
    let photos = MockPhotoService()

    init() {
        accounts.accountResult = .success(makeAccount())
    }

    func appear(_ viewModel: ViewModel, params: [String: String] = [:]) throws {
        try viewModel.handle(IntentInput(action: "appear", params: params, session: "s1", screenID: "x"))
    }

    // MARK: Browse

    @Test func browseLoadsTheFeedAsAListOfTitleAuthorAndLikes() throws {
        let browse = BrowseViewModel(session: "s1", accounts: accounts, photos: photos)
        let log = StateLog(browse)
        try appear(browse)
        #expect(log.states.first == .loading)
        #expect(log.states.last?.success(Photos_V1_PhotoList.self)?.photos.map(\.id) == ["photo:1", "photo:2"])
        #expect(photos.calls == ["feed ana@example.com"])
        let list = try #require(browse.presentation().collection)
        #expect(list.style == .list)
        #expect(list.action == "select")
        #expect(list.field == "photo")
        #expect(list.items.map(\.id) == ["photo:1", "photo:2"])
        #expect(list.items.first?.title == "Blue hour")
        #expect(list.items.first?.subtitle == "Yuki Tanabe")
        #expect(list.items.first?.detail == "♥ 41")
        #expect(browse.offeredActions().isEmpty, "select is the Browse coordinator's action, not the view model's")
    }

    @Test func browseSignedOutOrUnavailableSaysWhatToDo() throws {
        accounts.accountResult = .failure(.refused(.notSignedIn))
        let browse = BrowseViewModel(session: "s1", accounts: accounts, photos: photos)
        let log = StateLog(browse)
        try appear(browse)
        #expect(log.states.last == .error("You are logged out. Log in again to browse the photos."))
        accounts.accountResult = .success(makeAccount())
        photos.failure = .unavailable("down")
        try appear(browse)
        #expect(log.states.last == .error("The photo service is not available right now. Try again in a moment."))
        #expect(browse.presentation().texts == ["The photos are not loaded: open this tab again."])
    }

    // MARK: Photo

    @Test func photoLoadsTheScreensPhotoAndShowsItsDetails() throws {
        let viewModel = PhotoViewModel(session: "s1", accounts: accounts, photos: photos)
        let log = StateLog(viewModel)
        try appear(viewModel, params: ["photo": "photo:1"])
        #expect(log.states.first == .loading)
        #expect(log.states.last?.success(Photos_V1_Photo.self)?.id == "photo:1")
        let texts = viewModel.presentation().texts
        #expect(texts.contains("Blue hour"))
        #expect(texts.contains("by Yuki Tanabe · Reine, Lofoten"))
        #expect(texts.contains("Blue hour, taken at dawn."))
        #expect(texts.contains("#snow #blue-hour"))
        #expect(texts.contains("Likes: ♥ 41"))
        #expect(viewModel.presentation().buttons == ["like", "unlike"])
    }

    @Test func likeAndUnlikeEachDisableTheOtherWithAReason() throws {
        let viewModel = PhotoViewModel(session: "s1", accounts: accounts, photos: photos)
        let log = StateLog(viewModel)
        let params = ["photo": "photo:1"]
        try appear(viewModel, params: params)
        var offered = Dictionary(uniqueKeysWithValues: viewModel.offeredActions().map { ($0.name, $0) })
        #expect(offered["like"]?.disabled == false)
        #expect(offered["unlike"]?.disabled == true)
        #expect(offered["unlike"]?.disabledReason == "You have not liked this photo.")

        try viewModel.handle(IntentInput(action: "like", params: params))
        #expect(log.states.suffix(2).first == .loading)
        let liked = try #require(log.states.last?.success(Photos_V1_Photo.self))
        #expect(liked.liked && liked.likes == 42)
        #expect(viewModel.presentation().texts.contains("Likes: ♥ 42 · you like it"))
        offered = Dictionary(uniqueKeysWithValues: viewModel.offeredActions().map { ($0.name, $0) })
        #expect(offered["like"]?.disabled == true)
        #expect(offered["like"]?.disabledReason == "You already like this photo.")
        #expect(offered["unlike"]?.disabled == false)

        try viewModel.handle(IntentInput(action: "unlike", params: params))
        #expect(log.states.last?.success(Photos_V1_Photo.self)?.liked == false)
        #expect(photos.calls == ["photo photo:1 ana@example.com", "like photo:1 ana@example.com", "unlike photo:1 ana@example.com"])
    }

    @Test func aDisabledActionSentAnywayIsAnErrorThatCallsNoService() throws {
        let viewModel = PhotoViewModel(session: "s1", accounts: accounts, photos: photos)
        let log = StateLog(viewModel)
        try appear(viewModel, params: ["photo": "photo:2"])
        try viewModel.handle(IntentInput(action: "unlike", params: ["photo": "photo:2"]))
        #expect(log.states.last == .error("You have not liked this photo."))
        #expect(photos.calls == ["photo photo:2 ana@example.com"])
    }

    @Test func beforeAPhotoLoadsBothActionsAreDisabled() {
        let viewModel = PhotoViewModel(session: "s1", accounts: accounts, photos: photos)
        #expect(viewModel.offeredActions().allSatisfy { $0.disabled && $0.disabledReason == "The photo has not loaded yet." })
    }

    @Test func aPhotoScreenWithoutItsParameterIsRefusedAndAnUnknownPhotoSaysGoBack() throws {
        let viewModel = PhotoViewModel(session: "s1", accounts: accounts, photos: photos)
        let log = StateLog(viewModel)
        #expect(throws: IntentRefusal.self) { try viewModel.handle(IntentInput(action: "appear")) }
        try appear(viewModel, params: ["photo": "photo:99"])
        #expect(log.states.last == .error("This photo is no longer available. Go back to the list."))
    }

    @Test func twoPhotoScreensShareTheViewModelEachIntentNamesItsPhoto() throws {
        let viewModel = PhotoViewModel(session: "s1", accounts: accounts, photos: photos)
        try appear(viewModel, params: ["photo": "photo:1"])
        try appear(viewModel, params: ["photo": "photo:2"])
        try viewModel.handle(IntentInput(action: "like", params: ["photo": "photo:1"]))
        #expect(photos.liked == ["photo:1"])
    }

    // MARK: Likes

    @Test func likesListsTheLikedPhotosOrSaysWhatToDo() throws {
        let likes = LikesViewModel(session: "s1", accounts: accounts, photos: photos)
        let log = StateLog(likes)
        try appear(likes)
        #expect(log.states.last?.success(Photos_V1_PhotoList.self)?.photos.isEmpty == true)
        #expect(likes.presentation().texts == [LikesViewModel.emptyText])
        _ = try photos.like(id: "photo:2", user: "ana@example.com")
        try appear(likes)
        let list = try #require(likes.presentation().collection)
        #expect(list.items.map(\.id) == ["photo:2"])
        #expect(list.items.first?.detail == "♥ 8")
        #expect(list.action == "select" && list.field == "photo")
    }

    // MARK: Profile

    @Test func profileShowsNameAndEmailAndLogsOut() throws {
        let profile = ProfileViewModel(session: "s1", accounts: accounts)
        let log = StateLog(profile)
        try appear(profile)
        #expect(profile.presentation().texts == ["Ana Lima", "ana@example.com"])
        #expect(profile.presentation().buttons == ["logOut"])
        try profile.handle(IntentInput(action: "logOut", session: "s1"))
        #expect(accounts.calls == ["account s1", "signOut s1"])
        #expect(log.states.last?.successNotice == "loggedOut")
        #expect(log.states.last?.success(Photos_V1_Account.self)?.email == "ana@example.com")
    }

    @Test func profileSignedOut() throws {
        accounts.accountResult = .failure(.refused(.notSignedIn))
        let profile = ProfileViewModel(session: "s1", accounts: accounts)
        let log = StateLog(profile)
        try appear(profile)
        #expect(log.states.last == .error("You are logged out. Log in again to see your profile."))
    }

    // MARK: The app's view models

    @Test func everyScreenHasAViewModelThatPublishesPhotosMessages() throws {
        let factories = PhotosViewModels.factories(services: try makeServices())
        #expect(Set(factories.keys) == ["login", "createaccount", "forgotpassword", "resetpassword", "browse", "photo", "likes", "profile"])
        for (kind, make) in factories {
            #expect(type(of: make("s1")).screen == kind)
        }
    }
}
