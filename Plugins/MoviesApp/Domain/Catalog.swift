import FlowProtocol
import Foundation

/// The movies, series, actors and genres shipped with the app (Resources/catalog.json).
/// Each actor lists a filmography and each title a cast; `CatalogTests` checks the two agree.
public struct Catalog: Sendable, Codable {
    public struct CastEntry: Codable, Sendable, Equatable {
        public var actor: String
        public var role: String
    }

    public struct Actor: Codable, Sendable {
        public var id: String
        public var name: String
        public var born: Int
        public var popular: Bool
        public var bio: String
        public var image: String
        /// Ids of the movies and series whose cast lists this actor.
        public var filmography: [String]
    }

    public struct Movie: Codable, Sendable {
        public var id: String
        public var title: String
        public var year: Int
        public var genres: [String]
        public var synopsis: String
        public var image: String
        public var nowPlaying: Bool
        public var upcoming: Bool
        public var cast: [CastEntry]
    }

    public struct EpisodeEntry: Codable, Sendable {
        public var id: String
        public var number: Int
        public var title: String
    }

    public struct Season: Codable, Sendable {
        public var number: Int
        public var episodes: [EpisodeEntry]
    }

    public struct Series: Codable, Sendable {
        public var id: String
        public var title: String
        public var year: Int
        public var genres: [String]
        public var synopsis: String
        public var image: String
        public var cast: [CastEntry]
        public var seasons: [Season]

        /// Every episode, season by season.
        public var allEpisodes: [EpisodeEntry] { seasons.flatMap(\.episodes) }
    }

    public struct GenreEntry: Codable, Sendable {
        public var id: String
        public var name: String
    }

    public var imageBase: String
    public var genres: [GenreEntry]
    public var actors: [Actor]
    public var movies: [Movie]
    public var series: [Series]

    /// The catalog shipped as a resource of this module.
    public static func bundled() throws(CatalogError) -> Catalog {
        guard let url = Bundle.module.url(forResource: "catalog", withExtension: "json") else {
            throw CatalogError("catalog.json is missing from the MoviesApp resources; rebuild the package so it is copied")
        }
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw CatalogError("could not read \(url.path): \(error); check the installation of the MoviesApp resources")
        }
        return try load(data)
    }

    public static func load(_ data: Data) throws(CatalogError) -> Catalog {
        do {
            return try JSONDecoder().decode(Catalog.self, from: data)
        } catch {
            throw CatalogError("catalog.json is not a valid catalog: \(error); fix the file (see Plugins/MoviesApp/Domain/Catalog.swift for its shape)")
        }
    }

    public func actor(_ id: String) -> Actor? { actors.first { $0.id == id } }
    public func movie(_ id: String) -> Movie? { movies.first { $0.id == id } }
    public func series(_ id: String) -> Series? { series.first { $0.id == id } }

    /// The series, season number and episode of an episode id (`episode:<series>-<season>-<n>`).
    public func episode(_ id: String) -> (series: Series, season: Int, episode: EpisodeEntry)? {
        for show in series {
            for season in show.seasons {
                if let episode = season.episodes.first(where: { $0.id == id }) { return (show, season.number, episode) }
            }
        }
        return nil
    }

    public var genreList: [Movies_V1_Genre] {
        genres.map { entry in
            var genre = Movies_V1_Genre()
            genre.id = entry.id
            genre.name = entry.name
            return genre
        }
    }
}

public struct CatalogError: Error, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
