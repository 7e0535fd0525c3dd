import Foundation

/// The photos and authors shipped with the app (Resources/catalog.json), in feed order.
/// `PhotoCatalogTests` checks that the facts hold together (ids unique, every author exists).
public struct PhotoCatalog: Sendable, Codable {
    public struct Author: Codable, Sendable, Equatable {
        /// `author:<n>`.
        public var id: String
        public var name: String
        /// The handle, with its `@`.
        public var username: String
        public var location: String
        public var bio: String
    }

    public struct Photo: Codable, Sendable, Equatable {
        /// `photo:<n>`.
        public var id: String
        public var title: String
        /// The id of an entry of `authors`.
        public var author: String
        public var description: String
        public var imageURL: String
        public var width: Int
        public var height: Int
        public var tags: [String]
        /// Likes from outside the app (the app's own accounts add theirs on top).
        public var likes: Int
        public var location: String
    }

    public var authors: [Author]
    public var photos: [Photo]

    public init(authors: [Author], photos: [Photo]) {
        self.authors = authors
        self.photos = photos
    }

    /// The catalog shipped as a resource of this module.
    public static func bundled() throws(PhotoCatalogError) -> PhotoCatalog {
        guard let url = Bundle.module.url(forResource: "catalog", withExtension: "json") else {
            throw PhotoCatalogError("catalog.json is missing from the PhotosApp resources; rebuild the package so that Plugins/Photos/Resources/catalog.json is copied")
        }
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw PhotoCatalogError("could not read \(url.path): \(error); check that the PhotosApp resources are installed and readable")
        }
        return try load(data)
    }

    /// Decodes a catalog and checks that it holds together (see `problems`).
    public static func load(_ data: Data) throws(PhotoCatalogError) -> PhotoCatalog {
        let catalog: PhotoCatalog
        do {
            catalog = try JSONDecoder().decode(PhotoCatalog.self, from: data)
        } catch {
            throw PhotoCatalogError("catalog.json is not a valid photo catalog: \(error); fix the file (its shape is PhotoCatalog in Plugins/Photos/Domain/PhotoCatalog.swift)")
        }
        if let problem = catalog.problems.first {
            throw PhotoCatalogError("catalog.json does not hold together: \(problem); fix the file so every id is unique and every photo's author exists")
        }
        return catalog
    }

    public func author(_ id: String) -> Author? { authors.first { $0.id == id } }
    public func photo(_ id: String) -> Photo? { photos.first { $0.id == id } }

    /// What is wrong with the catalog's facts, empty when nothing is: duplicate ids, photos
    /// whose author is not listed, negative sizes or likes.
    public var problems: [String] {
        var problems: [String] = []
        for (kind, ids) in [("author", authors.map(\.id)), ("photo", photos.map(\.id))] {
            let repeated = Dictionary(grouping: ids, by: { $0 }).filter { $0.value.count > 1 }.keys.sorted()
            problems += repeated.map { "the \(kind) id \"\($0)\" is used more than once" }
        }
        let known = Set(authors.map(\.id))
        for photo in photos {
            if !known.contains(photo.author) { problems.append("\(photo.id) names the author \"\(photo.author)\", who is not in authors") }
            if photo.width <= 0 || photo.height <= 0 { problems.append("\(photo.id) has no size (\(photo.width)×\(photo.height))") }
            if photo.likes < 0 { problems.append("\(photo.id) has \(photo.likes) likes") }
        }
        return problems
    }
}

/// The bundled catalog could not be loaded; the text says why and what to fix.
public struct PhotoCatalogError: Error, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
