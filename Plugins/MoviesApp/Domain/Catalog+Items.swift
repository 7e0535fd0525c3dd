import FlowProtocol
import Foundation

/// The catalog as the screens show it: `Item`s for carousels and lists, `Details` for one title.
extension Catalog {
    /// An item of any kind by id, as carousels and lists show it; nil for an unknown id.
    public func item(for id: String) -> Movies_V1_Item? {
        if let movie = movie(id) { return item(id, kind: "movie", title: movie.title, image: movie.image, subtitle: String(movie.year)) }
        if let show = series(id) { return item(id, kind: "series", title: show.title, image: show.image, subtitle: String(show.year)) }
        if let actor = actor(id) { return item(id, kind: "actor", title: actor.name, image: actor.image, subtitle: "") }
        if let (show, season, episode) = episode(id) {
            let image = "\(imageBase)/episode/\(id.dropFirst("episode:".count)).jpg"
            return item(id, kind: "episode", title: episode.title, image: image, subtitle: "\(show.title) · S\(season) E\(episode.number)")
        }
        return nil
    }

    func item(_ id: String, kind: String, title: String, image: String, subtitle: String) -> Movies_V1_Item {
        var item = Movies_V1_Item()
        item.id = id
        item.kind = kind
        item.title = title
        item.imageURL = image
        item.subtitle = subtitle
        return item
    }

    /// The actors of a cast, the role as subtitle.
    func castItems(_ cast: [CastEntry]) -> [Movies_V1_Item] {
        cast.compactMap { entry in
            actor(entry.actor).map { item($0.id, kind: "actor", title: $0.name, image: $0.image, subtitle: entry.role) }
        }
    }

    /// An actor's movies and series, the role as subtitle, oldest first.
    func filmographyItems(_ actor: Actor) -> [Movies_V1_Item] {
        let entries: [(year: Int, item: Movies_V1_Item)] = actor.filmography.compactMap { id in
            if let movie = movie(id) {
                let role = movie.cast.first { $0.actor == actor.id }?.role ?? ""
                return (movie.year, item(id, kind: "movie", title: movie.title, image: movie.image, subtitle: role))
            }
            if let show = series(id) {
                let role = show.cast.first { $0.actor == actor.id }?.role ?? ""
                return (show.year, item(id, kind: "series", title: show.title, image: show.image, subtitle: role))
            }
            return nil
        }
        return entries.sorted { $0.year < $1.year }.map(\.item)
    }

    /// Everything the details screen shows of `id`, without the person's liked/watched flags.
    public func details(for id: String) -> Movies_V1_Details? {
        guard let item = item(for: id) else { return nil }
        var details = Movies_V1_Details()
        details.item = item
        if let movie = movie(id) {
            details.synopsis = movie.synopsis
            details.year = UInt32(movie.year)
            details.genres = movie.genres
            details.cast = castItems(movie.cast)
        } else if let show = series(id) {
            details.synopsis = show.synopsis
            details.year = UInt32(show.year)
            details.genres = show.genres
            details.cast = castItems(show.cast)
            details.episodes = show.seasons.flatMap { season in
                season.episodes.map { entry in
                    var episode = Movies_V1_Episode()
                    episode.id = entry.id
                    episode.season = UInt32(season.number)
                    episode.number = UInt32(entry.number)
                    episode.title = entry.title
                    return episode
                }
            }
        } else if let actor = actor(id) {
            details.synopsis = actor.bio
            details.year = UInt32(actor.born)
            details.filmography = filmographyItems(actor)
        } else if let (show, season, episode) = episode(id) {
            details.synopsis = "Season \(season), episode \(episode.number) of \(show.title)."
            details.year = UInt32(show.year)
            details.genres = show.genres
            details.cast = castItems(show.cast)
        }
        return details
    }
}
