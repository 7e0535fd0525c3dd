// photos-services: the Photos app's services (svc.accounts, svc.photos, svc.mail) over the
// bundled catalog, with the demo account demo@photos.dev / photos123. Accounts, signed-in
// sessions, reset codes, likes and mail are committed before each reply, with the reply to each
// call by idempotency key: `--data PATH` (SQLite; default <run-dir>/data/photos.sqlite),
// `--data postgresql://…` (PostgreSQL, shared by every replica) or `--data memory` (nothing kept). Each service is its own MDP worker; --lanes N keeps N requests in
// flight per service.
import AppStore
import FlowKit
import Foundation
import Logging
import PhotosApp

exit(FlowPlugin.run("photos-services") { bus, stop in
    let data = try AppData(
        option: bus.environment.options["data"], defaultFile: bus.environment.runDirectory.map { $0 + "/data/photos.sqlite" },
        app: "photos", replica: bus.environment.replica)
    let services: PhotosServices
    if let records = try data.open() {
        services = try PhotosServices.durable(records: records, catalog: try PhotoCatalog.bundled(), clock: { PluginClock.date() })
        bus.logger.info("app data in \(data)", metadata: ["flowbus.data": "\(records.path)"])
    } else {
        services = try PhotosServices.inMemory(clock: { PluginClock.date() })
        bus.logger.warning("app data in memory only: a restart of photos-services loses accounts, likes and mail", metadata: [:])
    }
    // With a store, each call's reply is kept there too, in the transaction of its changes:
    // a retry after a restart is answered, not applied again.
    try ServiceWorkerRuntime.serve(services.handlers(logger: bus.logger), bus: bus, replies: services.records, until: stop)
})
