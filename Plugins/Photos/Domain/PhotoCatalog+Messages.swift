/// The catalog's entries as the `photos.v1` messages the services answer.
extension PhotoCatalog {
    /// `id` as a message with the catalog's likes and not liked; nil for an unknown id.
    public func message(for id: String) -> Photos_V1_Photo? {
        photo(id).map(message(for:))
    }

    public func message(for photo: Photo) -> Photos_V1_Photo {
        var message = Photos_V1_Photo()
        message.id = photo.id
        message.title = photo.title
        if let author = author(photo.author) { message.author = Self.message(for: author) }
        message.description_p = photo.description
        message.imageURL = photo.imageURL
        message.width = UInt32(clamping: photo.width)
        message.height = UInt32(clamping: photo.height)
        message.tags = photo.tags
        message.likes = UInt32(clamping: photo.likes)
        message.location = photo.location
        return message
    }

    public static func message(for author: Author) -> Photos_V1_Author {
        var message = Photos_V1_Author()
        message.id = author.id
        message.name = author.name
        message.username = author.username
        message.location = author.location
        message.bio = author.bio
        return message
    }
}
