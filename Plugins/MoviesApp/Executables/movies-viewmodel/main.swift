// movies-viewmodel --screen KIND: the view-model worker of one screen kind of the sample app
// (signin, signup, emailverification, forgotpassword, resetpassword, home, details, likes, settings,
// changepassword, expenses), served
// as the MDP service vm.<kind> for every session. Its services are the svc.* workers on the bus.
import FlowKit
import Foundation
import MoviesApp

exit(FlowPlugin.run("movies-viewmodel") { bus, stop in
    let factories = AppViewModels.factories(services: AppServices.bus(transport: try bus.makeServiceTransport()))
    let screen = bus.environment.options["screen"] ?? bus.environment.plugin
    guard let make = factories[screen] else {
        throw PluginEnvironmentError(
            "there is no view model for the screen \"\(screen)\"; use --screen with one of \(factories.keys.sorted().joined(separator: ", "))")
    }
    try ViewModelRuntime(bus: bus, screen: screen, schema: try MoviesSchema.bundled(), make: make).run(until: stop)
})
