import FlowKit

/// `PhotoService` over the bus (`svc.photos`).
public final class BusPhotoService: PhotoService {
    let channel: ServiceChannel

    public init(transport: any ServiceTransport) {
        channel = ServiceChannel(transport: transport, service: PhotosServiceName.photos)
    }

    public func feed(user: String) throws(ServiceFailure) -> [Photos_V1_Photo] {
        try channel.call("feed", ["user": user], as: Photos_V1_PhotoList.self).photos
    }

    public func photo(id: String, user: String) throws(ServiceFailure) -> Photos_V1_Photo {
        try channel.call("photo", ["id": id, "user": user], as: Photos_V1_Photo.self)
    }

    public func like(id: String, user: String) throws(ServiceFailure) -> Photos_V1_Photo {
        try channel.call("like", ["id": id, "user": user], as: Photos_V1_Photo.self)
    }

    public func unlike(id: String, user: String) throws(ServiceFailure) -> Photos_V1_Photo {
        try channel.call("unlike", ["id": id, "user": user], as: Photos_V1_Photo.self)
    }

    public func likes(user: String) throws(ServiceFailure) -> [Photos_V1_Photo] {
        try channel.call("likes", ["user": user], as: Photos_V1_PhotoList.self).photos
    }
}
