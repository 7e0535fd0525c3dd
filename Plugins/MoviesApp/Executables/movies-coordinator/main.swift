// movies-coordinator --coordinator NAME: one coordinator of the sample app per process
// (app, auth, signup, main, home, settings, expenses). The app coordinator's process also
// owns every session's navigation.
import FlowKit
import Foundation
import MoviesApp

exit(FlowPlugin.run("movies-coordinator") { bus, stop in
    let name = bus.environment.options["coordinator"] ?? bus.environment.plugin
    guard let coordinator = AppCoordinators.all[name] else {
        throw PluginEnvironmentError(
            "there is no coordinator \"\(name)\"; use --coordinator with one of \(AppCoordinators.all.keys.sorted().joined(separator: ", "))")
    }
    try CoordinatorRuntime(
        bus: bus, coordinator: coordinator, peers: AppCoordinators.types, navigationOwner: name == AppCoordinator.name
    ).run(until: stop)
})
