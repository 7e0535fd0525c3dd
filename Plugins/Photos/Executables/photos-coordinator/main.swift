// photos-coordinator --coordinator NAME: one coordinator of the Photos app per process (app,
// authentication, browse). The app coordinator's process (the document's Main) also owns every
// session's navigation.
import FlowKit
import Foundation
import PhotosApp

exit(FlowPlugin.run("photos-coordinator") { bus, stop in
    let name = bus.environment.options["coordinator"] ?? bus.environment.plugin
    guard let coordinator = PhotosCoordinators.all[name] else {
        throw PluginEnvironmentError(
            "there is no Photos coordinator \"\(name)\"; use --coordinator with one of \(PhotosCoordinators.all.keys.sorted().joined(separator: ", "))")
    }
    try CoordinatorRuntime(
        bus: bus, coordinator: coordinator, peers: PhotosCoordinators.types, navigationOwner: name == MainCoordinator.name
    ).run(until: stop)
})
