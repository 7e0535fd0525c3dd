import PhotosApp
import Testing

@Suite struct PhotoServiceTests {
    let catalog: PhotoCatalog
    let photos: any PhotoService

    init() throws {
        catalog = try PhotoCatalog.bundled()
        photos = try makeServices().photos
    }

    func baseLikes(_ id: String) throws -> UInt32 {
        UInt32(try #require(catalog.photo(id)).likes)
    }

    @Test func theFeedIsTheCatalogInOrderWithAuthors() throws {
        let feed = try photos.feed(user: "ana@example.com")
        #expect(feed.map(\.id) == catalog.photos.map(\.id))
        #expect(feed.allSatisfy { !$0.liked && !$0.author.name.isEmpty })
        #expect(feed.map(\.likes) == catalog.photos.map { UInt32($0.likes) })
        #expect(try photos.feed(user: "").count == 36)
    }

    @Test func aPhotoByIdOrUnknown() throws {
        let photo = try photos.photo(id: "photo:7", user: "ana@example.com")
        #expect(photo.title == catalog.photo("photo:7")?.title)
        #expect(photo.imageURL == "https://images.example/photos/7.jpg")
        #expect(throws: ServiceFailure.refused(.unknownPhoto)) { try photos.photo(id: "photo:99", user: "ana@example.com") }
        #expect(throws: ServiceFailure.refused(.unknownPhoto)) { try photos.like(id: "movie:1", user: "ana@example.com") }
        #expect(throws: ServiceFailure.refused(.unknownPhoto)) { try photos.unlike(id: "", user: "ana@example.com") }
    }

    @Test func likingTwiceCountsOnce() throws {
        let base = try baseLikes("photo:3")
        let first = try photos.like(id: "photo:3", user: "ana@example.com")
        #expect(first.liked)
        #expect(first.likes == base + 1)
        let again = try photos.like(id: "photo:3", user: "ANA@example.com")
        #expect(again.liked)
        #expect(again.likes == base + 1)
        #expect(try photos.likes(user: "ana@example.com").map(\.id) == ["photo:3"])
    }

    @Test func unlikeTakesTheLikeBackAndIsNotAToggle() throws {
        let base = try baseLikes("photo:3")
        _ = try photos.like(id: "photo:3", user: "ana@example.com")
        let unliked = try photos.unlike(id: "photo:3", user: "ana@example.com")
        #expect(!unliked.liked)
        #expect(unliked.likes == base)
        let again = try photos.unlike(id: "photo:3", user: "ana@example.com")
        #expect(!again.liked)
        #expect(again.likes == base)
        #expect(try photos.likes(user: "ana@example.com").isEmpty)
        #expect(try photos.unlike(id: "photo:5", user: "bo@example.com").likes == (try baseLikes("photo:5")))
    }

    @Test func likesAreOldestFirstAndARelikeMovesToTheEnd() throws {
        for id in ["photo:9", "photo:2", "photo:30"] { _ = try photos.like(id: id, user: "ana@example.com") }
        #expect(try photos.likes(user: "ana@example.com").map(\.id) == ["photo:9", "photo:2", "photo:30"])
        _ = try photos.like(id: "photo:9", user: "ana@example.com")
        #expect(try photos.likes(user: "ana@example.com").map(\.id) == ["photo:9", "photo:2", "photo:30"])
        _ = try photos.unlike(id: "photo:9", user: "ana@example.com")
        _ = try photos.like(id: "photo:9", user: "ana@example.com")
        let likes = try photos.likes(user: "ana@example.com")
        #expect(likes.map(\.id) == ["photo:2", "photo:30", "photo:9"])
        #expect(likes.allSatisfy { $0.liked })
    }

    @Test func countsAddUpAcrossUsersInTheFeed() throws {
        let base = try baseLikes("photo:12")
        _ = try photos.like(id: "photo:12", user: "ana@example.com")
        _ = try photos.like(id: "photo:12", user: "bo@example.com")
        _ = try photos.like(id: "photo:1", user: "bo@example.com")
        let anas = try photos.feed(user: "ana@example.com")
        let twelve = try #require(anas.first { $0.id == "photo:12" })
        #expect(twelve.likes == base + 2)
        #expect(twelve.liked)
        #expect(anas.filter(\.liked).map(\.id) == ["photo:12"])
        let bos = try photos.feed(user: "bo@example.com")
        #expect(bos.filter(\.liked).map(\.id) == ["photo:1", "photo:12"])
        #expect(try photos.feed(user: "").filter(\.liked).isEmpty)
        #expect(try photos.photo(id: "photo:12", user: "").likes == base + 2)
        _ = try photos.unlike(id: "photo:12", user: "bo@example.com")
        #expect(try photos.photo(id: "photo:12", user: "ana@example.com").likes == base + 1)
    }

    @Test func likingNeedsAUser() throws {
        #expect(throws: ServiceFailure.refused(.notSignedIn)) { try photos.like(id: "photo:1", user: "") }
        #expect(throws: ServiceFailure.refused(.notSignedIn)) { try photos.unlike(id: "photo:1", user: " ") }
        #expect(try photos.likes(user: "").isEmpty)
    }
}
