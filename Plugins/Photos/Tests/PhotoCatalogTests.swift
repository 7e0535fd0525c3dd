import Foundation
import PhotosApp
import Testing

@Suite struct PhotoCatalogTests {
    let catalog: PhotoCatalog

    init() throws {
        catalog = try PhotoCatalog.bundled()
    }

    @Test func loadsThroughTheBundleWithTheExpectedSizes() {
        #expect(catalog.photos.count == 36)
        #expect(catalog.authors.count == 10)
        #expect(catalog.problems.isEmpty)
    }

    @Test func idsAreUniqueAndFollowTheirGrammar() {
        #expect(Set(catalog.photos.map(\.id)).count == catalog.photos.count)
        #expect(Set(catalog.authors.map(\.id)).count == catalog.authors.count)
        for (index, photo) in catalog.photos.enumerated() {
            #expect(photo.id == "photo:\(index + 1)")
            #expect(photo.imageURL == "https://images.example/photos/\(index + 1).jpg")
        }
        for (index, author) in catalog.authors.enumerated() {
            #expect(author.id == "author:\(index + 1)")
            #expect(author.username.hasPrefix("@") && !author.username.contains(" "))
        }
    }

    @Test func everyAuthorExistsAndHasPhotos() {
        let authors = Set(catalog.authors.map(\.id))
        #expect(catalog.photos.allSatisfy { authors.contains($0.author) })
        let credited = Set(catalog.photos.map(\.author))
        #expect(credited == authors)
        let perAuthor = Dictionary(grouping: catalog.photos, by: \.author).mapValues(\.count)
        #expect(perAuthor.values.allSatisfy { (3...4).contains($0) })
    }

    @Test func everyPhotoIsDescribed() {
        #expect(Set(catalog.photos.map(\.title)).count == catalog.photos.count)
        for photo in catalog.photos {
            #expect(!photo.title.isEmpty && !photo.description.isEmpty && !photo.location.isEmpty, "\(photo.id)")
            #expect(photo.width >= 3000 && photo.height >= 3000, "\(photo.id)")
            #expect(photo.likes > 0, "\(photo.id)")
            #expect(!photo.tags.isEmpty && Set(photo.tags).count == photo.tags.count, "\(photo.id)")
            #expect(photo.tags.allSatisfy { $0 == $0.lowercased() && !$0.contains(" ") }, "\(photo.id)")
        }
        for author in catalog.authors {
            #expect(!author.name.isEmpty && !author.bio.isEmpty && !author.location.isEmpty, "\(author.id)")
        }
    }

    @Test func aPhotoBecomesAMessageWithItsAuthor() throws {
        let message = try #require(catalog.message(for: "photo:4"))
        let entry = try #require(catalog.photo("photo:4"))
        #expect(message.title == entry.title)
        #expect(message.author.id == entry.author)
        #expect(message.author.name == catalog.author(entry.author)?.name)
        #expect(message.width == UInt32(entry.width) && message.height == UInt32(entry.height))
        #expect(message.likes == UInt32(entry.likes))
        #expect(!message.liked)
        #expect(catalog.message(for: "photo:0") == nil)
    }

    @Test func aBrokenCatalogIsRefusedWithAClearError() throws {
        do {
            _ = try PhotoCatalog.load(Data("{\"photos\": 3}".utf8))
            Issue.record("expected an error")
        } catch {
            #expect(error.description.contains("not a valid photo catalog"))
            #expect(error.description.contains("PhotoCatalog.swift"))
        }
        var broken = catalog
        broken.photos[2].author = "author:99"
        broken.photos[5].id = "photo:1"
        #expect(broken.problems.count == 2)
        #expect(broken.problems.contains { $0.contains("author:99") })
        #expect(broken.problems.contains { $0.contains("\"photo:1\" is used more than once") })
        let encoded = try JSONEncoder().encode(broken)
        do {
            _ = try PhotoCatalog.load(encoded)
            Issue.record("expected an error")
        } catch {
            #expect(error.description.contains("does not hold together"))
        }
    }
}
