import FlowKit
import FlowProtocol

/// Every coordinator of the app by name, for `movies-coordinator --coordinator NAME`.
public enum AppCoordinators {
    public static let types: [Coordinator.Type] = [
        AppCoordinator.self, AuthCoordinator.self, SignUpCoordinator.self, MainCoordinator.self,
        HomeCoordinator.self, SettingsCoordinator.self, ExpensesCoordinator.self,
    ]
    public static let all: [String: Coordinator.Type] = Dictionary(uniqueKeysWithValues: types.map { ($0.name, $0) })
}
