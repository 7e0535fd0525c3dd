import FlowKit
import FlowProtocol

/// Every coordinator of the Photos app by name, for `photos-coordinator --coordinator NAME`.
public enum PhotosCoordinators {
    public static let types: [Coordinator.Type] = [MainCoordinator.self, AuthenticationCoordinator.self, BrowseCoordinator.self]
    public static let all: [String: Coordinator.Type] = Dictionary(uniqueKeysWithValues: types.map { ($0.name, $0) })
}
