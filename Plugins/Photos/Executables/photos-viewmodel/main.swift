// photos-viewmodel --screen KIND: the view-model worker of one screen kind of the Photos app
// (login, createaccount, forgotpassword, resetpassword, browse, photo, likes, profile), served as the MDP
// service vm.<kind> for every session. Its services are the svc.* workers on the bus.
import FlowKit
import Foundation
import PhotosApp

exit(FlowPlugin.run("photos-viewmodel") { bus, stop in
    let factories = PhotosViewModels.factories(services: PhotosServices.bus(transport: try bus.makeServiceTransport()))
    let screen = bus.environment.options["screen"] ?? bus.environment.plugin
    guard let make = factories[screen] else {
        throw PluginEnvironmentError(
            "there is no Photos view model for the screen \"\(screen)\"; use --screen with one of \(factories.keys.sorted().joined(separator: ", "))")
    }
    try ViewModelRuntime(bus: bus, screen: screen, schema: try PhotosSchema.bundled(), make: make).run(until: stop)
})
