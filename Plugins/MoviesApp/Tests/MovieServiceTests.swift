import Foundation
import FlowProtocol
import MoviesApp
import Testing

@Suite struct MovieServiceTests {
    let catalog: Catalog
    let movies: InMemoryMovieService

    init() throws {
        catalog = try Catalog.bundled()
        movies = InMemoryMovieService(catalog: catalog)
    }

    @Test func homeHasFiveCarouselsInOrder() throws {
        let feed = try movies.home(user: "ana@example.com")
        #expect(feed.carousels.map(\.id) == ["nowPlaying", "upcoming", "popularActors", "recentlyWatched", "latestEpisodes"])
        #expect(feed.carousels.map(\.title) == ["Now playing", "Upcoming", "Popular actors", "Recently watched", "Latest episodes"])
        #expect(feed.carousels[0].items.map(\.id) == catalog.movies.filter { $0.nowPlaying }.map(\.id))
        #expect(feed.carousels[1].items.map(\.id) == catalog.movies.filter { $0.upcoming }.map(\.id))
        #expect(feed.carousels[2].items.map(\.id) == catalog.actors.filter { $0.popular }.map(\.id))
        #expect(feed.carousels[3].items.isEmpty)
        #expect(feed.carousels[4].items.isEmpty)
        #expect(feed.carousels[0].items.allSatisfy { !$0.title.isEmpty && $0.imageURL.hasPrefix("https://images.flowbus.dev/") })
    }

    @Test func watchingFeedsRecentlyWatchedAndLatestEpisodesForThatUserOnly() throws {
        _ = try movies.markWatched(id: "movie:3", user: "ana")
        _ = try movies.markWatched(id: "episode:1-1-2", user: "ana")
        _ = try movies.markWatched(id: "series:2", user: "ana")
        _ = try movies.markWatched(id: "movie:5", user: "ana")
        _ = try movies.markWatched(id: "movie:3", user: "ana")
        let feed = try movies.home(user: "ana")
        #expect(feed.carousels[3].items.map(\.id) == ["movie:3", "movie:5", "series:2", "episode:1-1-2", ])
        #expect(feed.carousels[4].items.map(\.id) == ["episode:2-1-1", "episode:1-1-3"])
        #expect(try movies.home(user: "bo").carousels[3].items.isEmpty)
    }

    @Test func theLastEpisodeOfASeasonLeadsToTheNextSeason() throws {
        let show = try #require(catalog.series("series:1"))
        let lastOfFirst = try #require(show.seasons[0].episodes.last)
        _ = try movies.markWatched(id: lastOfFirst.id, user: "ana")
        #expect(try movies.home(user: "ana").carousels[4].items.map(\.id) == ["episode:1-2-1"])
    }

    @Test func aFinishedSeriesHasNoNextEpisode() throws {
        let show = try #require(catalog.series("series:1"))
        let episodes = show.allEpisodes
        _ = try movies.markWatched(id: episodes[episodes.count - 2].id, user: "ana")
        #expect(try movies.home(user: "ana").carousels[4].items.map(\.id) == [episodes[episodes.count - 1].id])
        _ = try movies.markWatched(id: episodes[episodes.count - 1].id, user: "ana")
        #expect(try movies.home(user: "ana").carousels[4].items.isEmpty)
    }

    @Test func likeTogglesAndFeedsLikes() throws {
        #expect(try movies.like(id: "movie:12", user: "ana").liked)
        _ = try movies.like(id: "actor:7", user: "ana")
        #expect(try movies.likes(user: "ana").map(\.id) == ["movie:12", "actor:7"])
        #expect(try movies.like(id: "movie:12", user: "ana").liked == false)
        #expect(try movies.likes(user: "ana").map(\.id) == ["actor:7"])
        #expect(try movies.likes(user: "bo").isEmpty)
    }

    @Test func detailsCarryFlagsCastEpisodesAndFilmography() throws {
        _ = try movies.markWatched(id: "movie:12", user: "ana")
        let movie = try movies.details(id: "movie:12", user: "ana")
        #expect(movie.watched)
        #expect(!movie.liked)
        #expect(movie.cast.map(\.id) == catalog.movie("movie:12")?.cast.map(\.actor))
        #expect(!movie.synopsis.isEmpty)
        let series = try movies.details(id: "series:3", user: "ana")
        #expect(series.episodes.count == catalog.series("series:3")?.allEpisodes.count)
        let actor = try movies.details(id: "actor:7", user: "ana")
        #expect(Set(actor.filmography.map(\.id)) == Set(catalog.actor("actor:7")?.filmography ?? []))
        #expect(throws: ServiceFailure.refused(.unknownItem)) { try movies.details(id: "movie:999", user: "ana") }
        #expect(throws: ServiceFailure.refused(.unknownItem)) { try movies.like(id: "nothing", user: "ana") }
    }

    @Test func concurrentLikesFromManyThreadsAreAllKept() throws {
        let ids = catalog.movies.map(\.id)
        DispatchQueue.concurrentPerform(iterations: ids.count) { index in
            _ = try? movies.like(id: ids[index], user: "ana")
        }
        #expect(Set(try movies.likes(user: "ana").map(\.id)) == Set(ids))
    }
}

/// The services keep each id's item and details once made (`catalogEntry`): asked twice, before
/// and after a like of each, every id of every kind answers as the catalog itself does, with
/// only the user's flags set, and an unknown id is still refused.
@Suite struct MovieServiceCatalogEntryTests {
    @Test func everyIdAnswersAsTheCatalogDoesEveryTime() throws {
        let catalog = try Catalog.bundled()
        let movies = InMemoryMovieService(catalog: catalog)
        let episodes = catalog.series.flatMap(\.allEpisodes).map(\.id)
        let ids = catalog.movies.map(\.id) + catalog.series.map(\.id) + catalog.actors.map(\.id) + episodes
        #expect(ids.count > 100)
        for round in 0..<2 {
            for id in ids {
                let expected = try #require(catalog.details(for: id))
                var details = try movies.details(id: id, user: "ana")
                #expect(details.liked == (round == 1), "\(id)")
                details.liked = false
                details.watched = false
                #expect(details == expected, "\(id), round \(round)")
                if round == 0 { _ = try movies.like(id: id, user: "ana") }
            }
        }
        #expect(try movies.likes(user: "ana").map(\.id) == ids)
        #expect(try movies.likes(user: "ana") == ids.compactMap { catalog.item(for: $0) })
        #expect(throws: ServiceFailure.self) { try movies.details(id: "movie:999", user: "ana") }
        #expect(throws: ServiceFailure.self) { try movies.like(id: "movie:999", user: "ana") }
    }
}
