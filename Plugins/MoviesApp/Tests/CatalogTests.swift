import Foundation
import MoviesApp
import Testing

@Suite struct CatalogTests {
    let catalog: Catalog

    init() throws {
        catalog = try Catalog.bundled()
    }

    @Test func loadsThroughTheBundleWithTheExpectedSizes() {
        #expect(catalog.genres.count == 8)
        #expect(catalog.movies.count == 30)
        #expect(catalog.series.count == 6)
        #expect(catalog.actors.count == 20)
        #expect(catalog.movies.contains { $0.nowPlaying })
        #expect(catalog.movies.contains { $0.upcoming })
        #expect(catalog.actors.contains { $0.popular })
        #expect(!catalog.movies.contains { $0.nowPlaying && $0.upcoming })
    }

    @Test func idsAreUniqueAndFollowTheirGrammar() {
        let episodes = catalog.series.flatMap(\.allEpisodes).map(\.id)
        let ids = catalog.movies.map(\.id) + catalog.series.map(\.id) + catalog.actors.map(\.id) + episodes
        #expect(Set(ids).count == ids.count)
        #expect(Set(catalog.genres.map(\.id)).count == catalog.genres.count)
        #expect(catalog.movies.allSatisfy { $0.id.hasPrefix("movie:") && $0.image == "\(catalog.imageBase)/movie/\($0.id.dropFirst(6)).jpg" })
        #expect(catalog.series.allSatisfy { $0.id.hasPrefix("series:") })
        #expect(catalog.actors.allSatisfy { $0.id.hasPrefix("actor:") })
        for show in catalog.series {
            let number = show.id.dropFirst("series:".count)
            for season in show.seasons {
                #expect(!season.episodes.isEmpty)
                for episode in season.episodes {
                    #expect(episode.id == "episode:\(number)-\(season.number)-\(episode.number)")
                }
            }
        }
    }

    @Test func castsNameExistingActorsAndGenresExist() {
        let genreIDs = Set(catalog.genres.map(\.id))
        let casts = catalog.movies.map { ($0.id, $0.cast, $0.genres) } + catalog.series.map { ($0.id, $0.cast, $0.genres) }
        for (id, cast, genres) in casts {
            #expect(!cast.isEmpty, "\(id) has no cast")
            #expect(!genres.isEmpty, "\(id) has no genre")
            for entry in cast { #expect(catalog.actor(entry.actor) != nil, "\(id) lists unknown \(entry.actor)") }
            for genre in genres { #expect(genreIDs.contains(genre), "\(id) has unknown genre \(genre)") }
        }
    }

    @Test func filmographiesMatchCastsBothWays() {
        let casts = catalog.movies.map { ($0.id, $0.cast) } + catalog.series.map { ($0.id, $0.cast) }
        for actor in catalog.actors {
            let playedIn = Set(casts.filter { $0.1.contains { $0.actor == actor.id } }.map(\.0))
            #expect(Set(actor.filmography) == playedIn, "\(actor.id)'s filmography differs from the casts that list them")
            #expect(actor.filmography.count == playedIn.count, "\(actor.id)'s filmography has a duplicate")
            #expect(!actor.filmography.isEmpty)
        }
    }

    @Test func detailsOfAnActorListTheFilmographyWithRoles() throws {
        let actor = try #require(catalog.actors.first)
        let details = try #require(catalog.details(for: actor.id))
        #expect(Set(details.filmography.map(\.id)) == Set(actor.filmography))
        let first = try #require(details.filmography.first)
        let role = (catalog.movie(first.id)?.cast ?? catalog.series(first.id)?.cast ?? []).first { $0.actor == actor.id }?.role
        #expect(first.subtitle == role)
        #expect(details.item.imageURL == actor.image)
    }

    @Test func itemsOfEveryKind() throws {
        #expect(catalog.item(for: "movie:12")?.kind == "movie")
        #expect(catalog.item(for: "series:3")?.kind == "series")
        #expect(catalog.item(for: "actor:7")?.kind == "actor")
        let episode = try #require(catalog.item(for: "episode:3-1-2"))
        #expect(episode.kind == "episode")
        #expect(episode.imageURL == "https://images.flowbus.dev/episode/3-1-2.jpg")
        #expect(catalog.item(for: "movie:999") == nil)
        #expect(catalog.details(for: "series:3")?.episodes.first?.id == "episode:3-1-1")
    }

    @Test func aBrokenFileIsRefusedWithAClearMessage() {
        #expect(throws: CatalogError.self) { try Catalog.load(Data("{\"genres\": 3}".utf8)) }
    }
}
