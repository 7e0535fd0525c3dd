import FlowKit
import FlowProtocol
import Foundation
import PhotosApp
import SwiftProtobuf

/// A hand-written mock of the account service: answers what the test set and records calls.
final class MockAccountService: AccountService {
    var calls: [String] = []
    var registerResult: Result<Photos_V1_Account, ServiceFailure> = .failure(.unavailable("not set"))
    var signInResult: Result<Photos_V1_Account, ServiceFailure> = .failure(.unavailable("not set"))
    var accountResult: Result<Photos_V1_Account, ServiceFailure> = .failure(.refused(.notSignedIn))
    var signOutResult: Result<Void, ServiceFailure> = .success(())
    var resetResult: Result<Void, ServiceFailure> = .success(())
    var resetPasswordResult: Result<Void, ServiceFailure> = .success(())

    func register(name: String, email: String, password: String, session: String) throws(ServiceFailure) -> Photos_V1_Account {
        calls.append("register \(name) \(email) \(password) \(session)")
        return try registerResult.get()
    }

    func signIn(email: String, password: String, session: String) throws(ServiceFailure) -> Photos_V1_Account {
        calls.append("signIn \(email) \(password) \(session)")
        return try signInResult.get()
    }

    func account(forSession session: String) throws(ServiceFailure) -> Photos_V1_Account {
        calls.append("account \(session)")
        return try accountResult.get()
    }

    func signOut(session: String) throws(ServiceFailure) {
        calls.append("signOut \(session)")
        try signOutResult.get()
    }

    func requestPasswordReset(email: String) throws(ServiceFailure) {
        calls.append("requestPasswordReset \(email)")
        try resetResult.get()
    }

    func resetPassword(email: String, code: String, newPassword: String) throws(ServiceFailure) {
        calls.append("resetPassword \(email) \(code) \(newPassword)")
        try resetPasswordResult.get()
    }
}

/// A mock of the photo service over a few photos: likes kept per photo, a failure the test sets.
final class MockPhotoService: PhotoService {
    var calls: [String] = []
    var failure: ServiceFailure?
    var photos: [Photos_V1_Photo]
    var liked: [String] = []

    init(photos: [Photos_V1_Photo] = [makePhoto("photo:1", "Blue hour", by: "Yuki Tanabe", likes: 41), makePhoto("photo:2", "Dunes", by: "Ana Lima", likes: 7)]) {
        self.photos = photos
    }

    func answer<T>(_ call: String, _ value: () throws(ServiceFailure) -> T) throws(ServiceFailure) -> T {
        calls.append(call)
        if let failure { throw failure }
        return try value()
    }

    func find(_ id: String) throws(ServiceFailure) -> Photos_V1_Photo {
        guard var photo = photos.first(where: { $0.id == id }) else { throw .refused(.unknownPhoto) }
        if liked.contains(id) {
            photo.liked = true
            photo.likes += 1
        }
        return photo
    }

    func feed(user: String) throws(ServiceFailure) -> [Photos_V1_Photo] {
        try answer("feed \(user)") { () throws(ServiceFailure) in try photos.map { photo throws(ServiceFailure) in try find(photo.id) } }
    }

    func photo(id: String, user: String) throws(ServiceFailure) -> Photos_V1_Photo {
        try answer("photo \(id) \(user)") { () throws(ServiceFailure) in try find(id) }
    }

    func like(id: String, user: String) throws(ServiceFailure) -> Photos_V1_Photo {
        try answer("like \(id) \(user)") { () throws(ServiceFailure) in
            _ = try find(id)
            if !liked.contains(id) { liked.append(id) }
            return try find(id)
        }
    }

    func unlike(id: String, user: String) throws(ServiceFailure) -> Photos_V1_Photo {
        try answer("unlike \(id) \(user)") { () throws(ServiceFailure) in
            _ = try find(id)
            liked.removeAll { $0 == id }
            return try find(id)
        }
    }

    func likes(user: String) throws(ServiceFailure) -> [Photos_V1_Photo] {
        try answer("likes \(user)") { () throws(ServiceFailure) in try liked.map { id throws(ServiceFailure) in try find(id) } }
    }
}

func makePhoto(_ id: String, _ title: String, by author: String, likes: UInt32, location: String = "Reine, Lofoten") -> Photos_V1_Photo {
    var photo = Photos_V1_Photo()
    photo.id = id
    photo.title = title
    photo.author.id = "author:1"
    photo.author.name = author
    photo.description_p = "\(title), taken at dawn."
    photo.tags = ["snow", "blue-hour"]
    photo.likes = likes
    photo.location = location
    photo.width = 3000
    photo.height = 2000
    photo.imageURL = "https://images.example/photos/\(id.dropFirst(6)).jpg"
    return photo
}

func makeAccount(_ email: String = "ana@example.com", name: String = "Ana Lima") -> Photos_V1_Account {
    var account = Photos_V1_Account()
    account.email = email
    account.name = name
    return account
}

/// Every state a view model published, with the payload shown beside it.
final class StateLog {
    var states: [ViewModelState] = []
    var data: [ScreenPayload?] = []

    init(_ viewModel: ViewModel) {
        viewModel.onChange = { [unowned self] state, data in
            self.states.append(state)
            self.data.append(data)
        }
    }

    var lastNotice: String { (data.last ?? nil)?.notice?.code ?? "" }
    var lastNoticeText: String { (data.last ?? nil)?.notice?.text ?? "" }
    func last<M: SwiftProtobuf.Message>(_ type: M.Type) -> M? { (data.last ?? nil)?.decode(type) }
}

extension ViewModelState {
    var errorMessage: String? {
        if case .error(let message) = self { return message }
        return nil
    }

    var successNotice: String? {
        if case .success(let payload) = self { return payload.notice?.code ?? "" }
        return nil
    }

    func success<M: SwiftProtobuf.Message>(_ type: M.Type) -> M? {
        if case .success(let payload) = self { return payload.decode(type) }
        return nil
    }
}

extension Flowbus_V1_Presentation {
    /// Every text of the presentation, one per line, to look for words in.
    var texts: [String] {
        components.flatMap { component -> [String] in
            switch component.component {
            case .text(let text): [text.text]
            case .summary(let summary): ["\(summary.label): \(summary.value)"]
            case .notice(let notice): [notice.text]
            case .collection(let collection): collection.items.isEmpty ? [collection.emptyText] : collection.items.map { "\($0.title) — \($0.subtitle) — \($0.detail)" }
            default: []
            }
        }
    }

    var fields: [Flowbus_V1_Field] {
        components.compactMap { component -> Flowbus_V1_Field? in
            if case .field(let field) = component.component { return field }
            return nil
        }
    }

    var buttons: [String] {
        components.flatMap { component -> [String] in
            if case .buttons(let buttons) = component.component { return buttons.buttons.map(\.action) }
            return []
        }
    }

    var collection: Flowbus_V1_Collection? {
        components.lazy.compactMap { component -> Flowbus_V1_Collection? in
            if case .collection(let collection) = component.component { return collection }
            return nil
        }.first
    }
}
