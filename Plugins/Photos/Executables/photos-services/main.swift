// photos-services: the Photos app's in-memory services (svc.accounts, svc.photos, svc.mail) over
// the bundled catalog, with the demo account demo@photos.dev / photos123. Each service is its own
// MDP worker; --lanes N keeps N requests in flight per service.
import FlowKit
import Foundation
import PhotosApp

exit(FlowPlugin.run("photos-services") { bus, stop in
    let services = try PhotosServices.inMemory()
    try ServiceWorkerRuntime.serve(services.handlers(logger: bus.logger), bus: bus, until: stop)
})
