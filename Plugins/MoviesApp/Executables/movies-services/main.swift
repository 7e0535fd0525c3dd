// movies-services: the sample app's services (svc.users, svc.genres, svc.movies, svc.mail,
// svc.expenses) over the bundled catalog, with the verified demo account demo@flowbus.dev /
// flowbus123. Accounts, likes, reports and mail are committed before each reply, with the
// reply to each call by idempotency key: `--data PATH` (SQLite; default <run-dir>/data/movies.sqlite),
// `--data postgresql://…` (PostgreSQL, shared by every replica) or `--data memory` (nothing kept). Each service is its own MDP worker; --lanes N keeps N
// requests in flight per service. `--token-lifetime SECONDS` (600) and `--reset-code-lifetime
// SECONDS` (900): how long a mailed verification code and password reset code stay valid.
import AppStore
import FlowKit
import Foundation
import Logging
import MoviesApp

exit(FlowPlugin.run("movies-services") { bus, stop in
    let data = try AppData(
        option: bus.environment.options["data"], defaultFile: bus.environment.runDirectory.map { $0 + "/data/movies.sqlite" },
        app: "movies", replica: bus.environment.replica)
    let lifetimes = try AppServices.codeLifetimes(from: bus.environment.options)
    let services: AppServices
    if let records = try data.open() {
        services = try AppServices.durable(
            records: records, catalog: try Catalog.bundled(), tokenLifetime: lifetimes.token, resetCodeLifetime: lifetimes.resetCode,
            clock: { PluginClock.date() })
        bus.logger.info("app data in \(data)", metadata: ["flowbus.data": "\(records.path)"])
    } else {
        services = try AppServices.inMemory(tokenLifetime: lifetimes.token, resetCodeLifetime: lifetimes.resetCode, clock: { PluginClock.date() })
        bus.logger.warning("app data in memory only: a restart of movies-services loses accounts, likes and reports", metadata: [:])
    }
    // With a store, each call's reply is kept there too, in the transaction of its changes:
    // a retry after a restart is answered, not applied again.
    try ServiceWorkerRuntime.serve(services.handlers(logger: bus.logger), bus: bus, replies: services.records, until: stop)
})
