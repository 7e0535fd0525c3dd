import AppStore
import Foundation
import Synchronization

/// The catalog's photos, with the likes of the app's accounts kept in memory on top of the
/// catalog's own counts. With a record store, each user's likes (a `photo-likes` record: the
/// ids, oldest like first) are committed before `like` or `unlike` answers.
public final class InMemoryPhotoService: PhotoService, Sendable {
    struct Likes {
        /// User (e-mail key) → the photo ids they like, oldest like first.
        var byUser: [String: [String]] = [:]
        /// Photo id → how many users of the app like it.
        var counts: [String: Int] = [:]
    }

    let catalog: PhotoCatalog
    let store = Mutex(Likes())
    let records: RecordStore?

    public init(catalog: PhotoCatalog, records: RecordStore? = nil) {
        self.catalog = catalog
        self.records = records
    }

    /// Follows every user's likes in the record store (none without one): loaded at start, and
    /// kept up with other replicas' writes; the counts follow from them.
    public func followRecords() {
        records?.follow("photo-likes", as: [String].self) { [weak self] user, ids in
            self?.store.withLock { likes in
                for id in likes.byUser[user] ?? [] { likes.counts[id, default: 1] -= 1 }
                likes.byUser[user] = (ids?.isEmpty ?? true) ? nil : ids
                for id in ids ?? [] { likes.counts[id, default: 0] += 1 }
            }
        }
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
        try change(id: id, user: user) { liked in
            if !liked.contains(id) { liked.append(id) }
        }
    }

    public func unlike(id: String, user: String) throws(ServiceFailure) -> Photos_V1_Photo {
        try change(id: id, user: user) { liked in
            liked.removeAll { $0 == id }
        }
    }

    public func likes(user: String) throws(ServiceFailure) -> [Photos_V1_Photo] {
        let user = emailKey(user)
        return store.withLock { likes in
            (likes.byUser[user] ?? []).compactMap { catalog.photo($0) }.map { decorated($0, likes: likes, user: user) }
        }
    }

    /// Applies `update` to the photos a named user likes (`id` a known photo), commits the
    /// result when it changed, then answers the photo.
    func change(id: String, user: String, _ update: (inout [String]) -> Void) throws(ServiceFailure) -> Photos_V1_Photo {
        guard let photo = catalog.photo(id) else { throw .refused(.unknownPhoto) }
        let user = emailKey(user)
        guard !user.isEmpty else { throw .refused(.notSignedIn) }
        return try store.withLock { likes throws(ServiceFailure) in
            let before = likes.byUser[user] ?? []
            var after = before
            update(&after)
            if after != before {
                try records.commit([after.isEmpty ? .delete(kind: "photo-likes", key: user) : .put("photo-likes", user, json: after)])
                likes.byUser[user] = after.isEmpty ? nil : after
                likes.counts[id, default: 0] += after.count - before.count
            }
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
