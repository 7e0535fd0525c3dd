import FlowKit
import FlowProtocol

/// The Expenses tab: the expense report; presents a confirmation when a report is registered.
public final class ExpensesCoordinator: Coordinator {
    public override class var name: String { "expenses" }
    public override class var watchedScreens: [String] { ["expenses"] }

    public override func screenChanged(_ change: ScreenChange) {
        guard case .success = change.state, change.notice == "reportRegistered" else { return }
        navigate(.present(AppScreens.confirmation(change.noticeText, owner: Self.name)))
    }
}
