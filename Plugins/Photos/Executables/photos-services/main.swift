// photos-services: the Photos app's services (svc.accounts, svc.photos, svc.mail) over the
// bundled catalog, with the demo account demo@photos.dev / photos123. Accounts, signed-in
// sessions, reset codes, likes and mail are committed to SQLite before each reply: `--data PATH`
// (default <run-dir>/data/photos.sqlite; `--data memory` keeps nothing), with the reply to each
// call by idempotency key. Each service is its own MDP worker; --lanes N keeps N requests in
// flight per service.
import FlowKit
import Foundation
import Logging
import PhotosApp

exit(FlowPlugin.run("photos-services") { bus, stop in
    let path = bus.environment.options["data"] ?? bus.environment.runDirectory.map { $0 + "/data/photos.sqlite" }
    let services: PhotosServices
    if let path, path != "memory" {
        services = try PhotosServices.durable(path: path, catalog: try PhotoCatalog.bundled())
        bus.logger.info("app data in SQLite", metadata: ["flowbus.data": "\(path)"])
    } else {
        services = try PhotosServices.inMemory()
        bus.logger.warning("app data in memory only: a restart of photos-services loses accounts, likes and mail", metadata: [:])
    }
    // With a data file, each call's reply is kept there too, in the transaction of its changes:
    // a retry after a restart is answered, not applied again.
    try ServiceWorkerRuntime.serve(services.handlers(logger: bus.logger), bus: bus, replies: services.records, until: stop)
})
