import AppStore
import FlowKit
import FlowProtocol
import Foundation
import Logging

/// The MDP service names of the Photos app's services.
public enum PhotosServiceName {
    public static let accounts = "svc.accounts"
    public static let photos = "svc.photos"
    public static let mail = "svc.mail"
    public static let all = [accounts, photos, mail]
}

/// The app's three services, as view models receive them (each view model takes the ones it uses).
public struct PhotosServices {
    public var accounts: any AccountService
    public var photos: any PhotoService
    public var mail: any MailService
    /// Where the services commit their data (`durable`); nil: memory only.
    public var records: RecordStore?

    public init(accounts: any AccountService, photos: any PhotoService, mail: any MailService, records: RecordStore? = nil) {
        self.accounts = accounts
        self.photos = photos
        self.mail = mail
        self.records = records
    }

    /// In-memory services over `catalog`, the demo account seeded (demo@photos.dev / photos123).
    /// Serve them with `handlers`.
    public static func inMemory(
        catalog: PhotoCatalog, codeLifetime: TimeInterval = InMemoryAccountService.defaultCodeLifetime,
        clock: @escaping PhotosClock = { Date() }, hashIterations: Int = InMemoryAccountService.defaultHashIterations
    ) -> PhotosServices {
        let mail = InMemoryMailService()
        let accounts = InMemoryAccountService(mail: mail, codeLifetime: codeLifetime, clock: clock, hashIterations: hashIterations)
        accounts.seedDemoAccount()
        return PhotosServices(accounts: accounts, photos: InMemoryPhotoService(catalog: catalog), mail: mail)
    }

    /// The services over `catalog` with their data in SQLite at `path` (created if missing):
    /// accounts, signed-in sessions, reset codes, likes and outboxes committed before each reply
    /// are there again after a kill -9; the demo account is seeded only when absent.
    public static func durable(
        path: String, catalog: PhotoCatalog, codeLifetime: TimeInterval = InMemoryAccountService.defaultCodeLifetime,
        clock: @escaping PhotosClock = { Date() }, hashIterations: Int = InMemoryAccountService.defaultHashIterations
    ) throws(RecordStoreError) -> PhotosServices {
        try durable(
            records: try RecordStore(path: path), catalog: catalog, codeLifetime: codeLifetime, clock: clock, hashIterations: hashIterations)
    }

    /// The services over `catalog` with their data in `records` — a SQLite file, or a
    /// PostgreSQL database that replicas share (each call then sees what any replica committed).
    public static func durable(
        records: RecordStore, catalog: PhotoCatalog, codeLifetime: TimeInterval = InMemoryAccountService.defaultCodeLifetime,
        clock: @escaping PhotosClock = { Date() }, hashIterations: Int = InMemoryAccountService.defaultHashIterations
    ) throws(RecordStoreError) -> PhotosServices {
        let mail = InMemoryMailService(records: records)
        let accounts = InMemoryAccountService(
            mail: mail, codeLifetime: codeLifetime, clock: clock, hashIterations: hashIterations, records: records)
        let photos = InMemoryPhotoService(catalog: catalog, records: records)
        mail.followRecords()
        accounts.followRecords()
        photos.followRecords()
        try records.load()
        accounts.seedDemoAccount()
        return PhotosServices(accounts: accounts, photos: photos, mail: mail, records: records)
    }

    /// The in-memory services over the bundled catalog (`photos-services --data memory`).
    public static func inMemory(
        codeLifetime: TimeInterval = InMemoryAccountService.defaultCodeLifetime, clock: @escaping PhotosClock = { Date() }
    ) throws(PhotoCatalogError) -> PhotosServices {
        inMemory(catalog: try PhotoCatalog.bundled(), codeLifetime: codeLifetime, clock: clock)
    }

    /// The services as adapters over `transport` (`svc.*` on the bus), as view-model workers use them.
    public static func bus(transport: any ServiceTransport) -> PhotosServices {
        PhotosServices(
            accounts: BusAccountService(transport: transport), photos: BusPhotoService(transport: transport),
            mail: BusMailService(transport: transport))
    }

    /// The server side of these services, keyed by MDP service name (`svc.accounts`, ...).
    public var handlers: [String: ServiceHandler] { handlers(logger: nil) }

    /// The handlers, logging each failed or refused call (service, method and outcome, never the
    /// arguments: they hold passwords and reset codes).
    public func handlers(logger: Logger?) -> [String: ServiceHandler] {
        let plain: [String: ServiceHandler] = [
            PhotosServiceName.accounts: ServiceHandlers.accounts(accounts),
            PhotosServiceName.photos: ServiceHandlers.photos(photos),
            PhotosServiceName.mail: ServiceHandlers.mail(mail),
        ]
        return LoggedServiceHandlers.wrap(plain, logger: logger)
    }
}
