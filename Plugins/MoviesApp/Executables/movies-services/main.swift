// movies-services: the sample app's services (svc.users, svc.genres, svc.movies, svc.mail,
// svc.expenses) over the bundled catalog, with the verified demo account demo@flowbus.dev /
// flowbus123. Accounts, likes, reports and mail are committed to SQLite before each reply:
// `--data PATH` (default <run-dir>/data/movies.sqlite; `--data memory` keeps nothing), with the
// reply to each call by idempotency key. Each service is its own MDP worker; --lanes N keeps N
// requests in flight per service.
import FlowKit
import Foundation
import Logging
import MoviesApp

exit(FlowPlugin.run("movies-services") { bus, stop in
    let path = bus.environment.options["data"] ?? bus.environment.runDirectory.map { $0 + "/data/movies.sqlite" }
    let services: AppServices
    if let path, path != "memory" {
        services = try AppServices.durable(path: path, catalog: try Catalog.bundled())
        bus.logger.info("app data in SQLite", metadata: ["flowbus.data": "\(path)"])
    } else {
        services = try AppServices.inMemory()
        bus.logger.warning("app data in memory only: a restart of movies-services loses accounts, likes and reports", metadata: [:])
    }
    // With a data file, each call's reply is kept there too, in the transaction of its changes:
    // a retry after a restart is answered, not applied again.
    try ServiceWorkerRuntime.serve(services.handlers(logger: bus.logger), bus: bus, replies: services.records, until: stop)
})
