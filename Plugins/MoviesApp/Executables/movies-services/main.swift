// movies-services: the sample app's in-memory services (svc.users, svc.genres, svc.movies,
// svc.mail, svc.expenses) over the bundled catalog, with the verified demo account
// demo@flowbus.dev / flowbus123. Each service is its own MDP worker; --lanes N keeps N
// requests in flight per service.
import FlowKit
import Foundation
import MoviesApp

exit(FlowPlugin.run("movies-services") { bus, stop in
    let services = try AppServices.inMemory()
    try ServiceWorkerRuntime.serve(services.handlers(logger: bus.logger), bus: bus, until: stop)
})
