import Foundation
import Synchronization

/// The catalog's photos, with the likes of the app's accounts kept in memory on top of the
/// catalog's own counts.
public final class InMemoryPhotoService: PhotoService, Sendable {
    struct Likes {
        /// User (e-mail key) → the photo ids they like, oldest like first.
        var byUser: [String: [String]] = [:]
        /// Photo id → how many users of the app like it.
        var counts: [String: Int] = [:]
    }

    let catalog: PhotoCatalog
    let store = Mutex(Likes())

    public init(catalog: PhotoCatalog) {
        self.catalog = catalog
    }

    public func feed(user: String) throws(ServiceFailure) -> [Photos_V1_Photo] {
        let user = emailKey(user)
        return store.withLock { likes in catalog.photos.map { decorated($0, likes: likes, user: user) } }
    }

    public func photo(id: String, user: String) throws(ServiceFailure) -> Photos_V1_Photo {
        guard let photo = catalog.photo(id) else { throw .refused(.unknownPhoto) }
        let user = emailKey(user)
        return store.withLock { decorated(photo, likes: $0, user: user) }
    }

    public func like(id: String, user: String) throws(ServiceFailure) -> Photos_V1_Photo {
        try change(id: id, user: user) { likes, user in
            guard !likes.byUser[user, default: []].contains(id) else { return }
            likes.byUser[user, default: []].append(id)
            likes.counts[id, default: 0] += 1
        }
    }

    public func unlike(id: String, user: String) throws(ServiceFailure) -> Photos_V1_Photo {
        try change(id: id, user: user) { likes, user in
            guard let index = likes.byUser[user]?.firstIndex(of: id) else { return }
            likes.byUser[user]?.remove(at: index)
            likes.counts[id, default: 1] -= 1
        }
    }

    public func likes(user: String) throws(ServiceFailure) -> [Photos_V1_Photo] {
        let user = emailKey(user)
        return store.withLock { likes in
            (likes.byUser[user] ?? []).compactMap { catalog.photo($0) }.map { decorated($0, likes: likes, user: user) }
        }
    }

    /// Applies `update` to the likes of a known photo and a named user, then answers the photo.
    func change(id: String, user: String, _ update: (inout Likes, String) -> Void) throws(ServiceFailure) -> Photos_V1_Photo {
        guard let photo = catalog.photo(id) else { throw .refused(.unknownPhoto) }
        let user = emailKey(user)
        guard !user.isEmpty else { throw .refused(.notSignedIn) }
        return store.withLock { likes in
            update(&likes, user)
            return decorated(photo, likes: likes, user: user)
        }
    }

    func decorated(_ photo: PhotoCatalog.Photo, likes: Likes, user: String) -> Photos_V1_Photo {
        var message = catalog.message(for: photo)
        message.likes = UInt32(clamping: photo.likes + likes.counts[photo.id, default: 0])
        message.liked = likes.byUser[user]?.contains(photo.id) ?? false
        return message
    }
}
