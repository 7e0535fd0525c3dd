import AppStore
import FlowProtocol
import Foundation
import Synchronization

/// Movies, series and actors from the catalog, with each user's likes and watch history.
public final class InMemoryMovieService: MovieService, Sendable {
    struct UserData: Codable {
        /// Oldest like first.
        var liked: [String] = []
        /// Newest last; an id appears once.
        var watched: [String] = []
    }

    let catalog: Catalog
    let users = Mutex<[String: UserData]>([:])
    /// Each id's details as the catalog gives them (its item among them), made on first use: the
    /// catalog does not change while the services run, and building them searched its arrays one
    /// by one on every call (a tenth of the services' CPU for a like).
    private let shown = Mutex<[String: Movies_V1_Details]>([:])
    /// Where each user's likes and watched list (`movies-user` records) are kept; nil: memory only.
    let records: RecordStore?

    public init(catalog: Catalog, records: RecordStore? = nil) {
        self.catalog = catalog
        self.records = records
    }

    /// Follows the `movies-user` records: loaded at start, and kept up with other replicas' writes.
    public func followRecords() {
        records?.follow("movies-user", as: UserData.self) { [weak self] user, data in
            self?.users.withLock { $0[user] = data }
        }
    }

    /// Changes one user's data: committed to the record store first, then in memory.
    func update(_ user: String, _ change: (inout UserData) -> Void) throws(ServiceFailure) {
        try users.withLock { users throws(ServiceFailure) in
            var data = users[user] ?? UserData()
            change(&data)
            try records.commit("movies-user", user, json: data)
            users[user] = data
        }
    }

    public func home(user: String) throws(ServiceFailure) -> Movies_V1_HomeFeed {
        let data = users.withLock { $0[user] ?? UserData() }
        func carousel(_ id: String, _ title: String, _ ids: [String]) -> Movies_V1_Carousel {
            var carousel = Movies_V1_Carousel()
            carousel.id = id
            carousel.title = title
            carousel.items = ids.compactMap { catalogEntry($0)?.item }
            return carousel
        }
        var feed = Movies_V1_HomeFeed()
        feed.carousels = [
            carousel("nowPlaying", "Now playing", catalog.movies.filter(\.nowPlaying).map(\.id)),
            carousel("upcoming", "Upcoming", catalog.movies.filter(\.upcoming).map(\.id)),
            carousel("popularActors", "Popular actors", catalog.actors.filter(\.popular).map(\.id)),
            carousel("recentlyWatched", "Recently watched", data.watched.reversed()),
            carousel("latestEpisodes", "Latest episodes", nextEpisodes(watched: data.watched)),
        ]
        return feed
    }

    /// For each series the user watched something of (the series or an episode), most recent
    /// first: the episode after the last one watched, or the first when only the series was.
    func nextEpisodes(watched: [String]) -> [String] {
        var seen = Set<String>()
        var next: [String] = []
        for id in watched.reversed() {
            let show = catalog.series(id) ?? catalog.episode(id)?.series
            guard let show, seen.insert(show.id).inserted else { continue }
            let episodes = show.allEpisodes
            let last = episodes.lastIndex { watched.contains($0.id) } ?? -1
            if last + 1 < episodes.count { next.append(episodes[last + 1].id) }
        }
        return next
    }

    /// The details of `id` (without the user's flags), its item as `.item`; nil for an id the
    /// catalog lacks.
    func catalogEntry(_ id: String) -> Movies_V1_Details? {
        if let known = shown.withLock({ $0[id] }) { return known }
        guard let details = catalog.details(for: id) else { return nil }
        shown.withLock { $0[id] = details }
        return details
    }

    public func details(id: String, user: String) throws(ServiceFailure) -> Movies_V1_Details {
        guard var details = catalogEntry(id) else { throw .refused(.unknownItem) }
        let data = users.withLock { $0[user] ?? UserData() }
        details.liked = data.liked.contains(id)
        details.watched = data.watched.contains(id)
        return details
    }

    public func like(id: String, user: String) throws(ServiceFailure) -> Movies_V1_Details {
        guard catalogEntry(id) != nil else { throw .refused(.unknownItem) }
        try update(user) { data in
            if let index = data.liked.firstIndex(of: id) { data.liked.remove(at: index) } else { data.liked.append(id) }
        }
        return try details(id: id, user: user)
    }

    public func markWatched(id: String, user: String) throws(ServiceFailure) -> Movies_V1_Details {
        guard catalogEntry(id) != nil else { throw .refused(.unknownItem) }
        try update(user) { data in
            data.watched.removeAll { $0 == id }
            data.watched.append(id)
        }
        return try details(id: id, user: user)
    }

    public func likes(user: String) throws(ServiceFailure) -> [Movies_V1_Item] {
        users.withLock { $0[user]?.liked ?? [] }.compactMap { catalogEntry($0)?.item }
    }
}
