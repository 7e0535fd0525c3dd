@testable import FlowClient
import FlowProtocol
import Foundation
import Testing

/// When a press refused as stale is sent again: only when the screen, once settled, shows what
/// the person pressed on. A tab shown again reloads, and its loading state keeps drawing the data
/// it had; a press made on it means the same once the load is done.
@Suite("Stale presses")
struct StalePressTests {
    static func state(_ phase: Flowbus_V1_ViewState.Phase, version: UInt64, liked: Bool, appearKey: String = "") -> ScreenState {
        var state = Flowbus_V1_ViewState()
        state.phase = phase
        state.screenVersion = version
        state.screenID = "details-movie-19"
        state.appearKey = appearKey
        state.payload = Data([1, 2, liked ? 1 : 0])
        state.actions = [BusFixture.action("like", service: "vm.details", handler: .viewModel)]
        return ScreenState(kind: "details", state: state, writer: "vm-details", incarnation: 1, sequence: version)
    }

    @Test("a loading state and the success it settles on show the same when their data are the same")
    func loadingThenTheSameSuccessShowTheSame() {
        let pressedOn = Self.state(.loading, version: 7, liked: true, appearKey: "appear/2")
        #expect(SessionClient.showsTheSame(pressedOn, Self.state(.success, version: 8, liked: true, appearKey: "appear/3")))
        #expect(SessionClient.showsTheSame(Self.state(.success, version: 6, liked: true), Self.state(.success, version: 8, liked: true)))
    }

    @Test("other data, or an error, do not show the same: the refusal stands")
    func otherDataOrAnErrorDoNot() {
        let pressedOn = Self.state(.loading, version: 7, liked: true)
        #expect(!SessionClient.showsTheSame(pressedOn, Self.state(.success, version: 8, liked: false)))
        #expect(!SessionClient.showsTheSame(pressedOn, Self.state(.error, version: 8, liked: true)))
        #expect(!SessionClient.showsTheSame(Self.state(.success, version: 6, liked: true), Self.state(.error, version: 8, liked: true)))
    }
}
