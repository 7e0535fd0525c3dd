import FlowKit
import FlowProtocol

/// The Expenses tab: the expense report; presents a confirmation when a report is registered.
public final class ExpensesCoordinator: Coordinator {
    public override class var name: String { "expenses" }
    public override class var watchedScreens: [String] { ["expenses"] }

    public override func screenChanged(_ screen: String, state: ViewModelState, data: Flowbus_V1_ScreenData?, screenID: String) {
        guard case .success(let data) = state, data.notice.code == "reportRegistered" else { return }
        navigate(.present(AppScreens.confirmation(data.notice.text, owner: Self.name)))
    }
}
