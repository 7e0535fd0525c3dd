@testable import FlowKit
import FlowProtocol
import Testing

/// Watches `tally`: on a `success` it counts it in its context and reports `tallied` to its
/// parent; every other state it lets pass.
final class WatchingCoordinator: Coordinator {
    override class var name: String { "watcher" }
    override class var watchedScreens: [String] { ["tally"] }

    override func screenChanged(_ change: ScreenChange) {
        guard case .success = change.state else { return }
        context["tallied"] = String((Int(context["tallied"] ?? "") ?? 0) + 1)
        report("tallied")
    }
}

@Suite("A watching coordinator's record")
struct WatchedScreenRecordTests {
    /// The record (`/c/<name>/<session>`) is written for a state the instance acted on, not for
    /// each state the watched screen publishes: a `loading` let pass changes nothing a restart
    /// would need (handled again, it is let pass again). It was written for every state.
    @Test func onlyAStateTheInstanceActedOnIsRecorded() async throws {
        let map = MemoryStateMap()
        let runtime = try CoordinatorRuntime(
            coordinator: WatchingCoordinator.self, writer: "coord-watcher/0", incarnation: 1, map: map.peer(),
            calls: SilentCalls(), viewModelCalls: nil, logger: quiet)
        runtime.start()
        defer { runtime.shutdown() }
        #expect(try coordinatorReply(runtime.respond(to: envelope(call("start", args: ["parent": "app"]), session: "s1"))).ok)
        func records() -> [Flowbus_V1_CoordinatorInstance] {
            map.writes.compactMap { entry in
                guard entry.key.text == "/c/watcher/s1", !entry.isDelete else { return nil }
                return try? Envelope.decodeChecked(entry.value).unwrap(Flowbus_V1_CoordinatorInstance.self)
            }
        }
        let started = records().count
        #expect(started == 1)

        let mirror = CloneKey.screenMirror(try ScreenName("tally"), try SessionID("s1"))
        let states: [(UInt64, Flowbus_V1_ViewState.Phase)] = [(1, .none), (2, .loading), (3, .success), (4, .loading), (5, .success)]
        for (version, phase) in states {
            var state = Flowbus_V1_ViewState()
            state.phase = phase
            state.screenVersion = version
            state.screenID = "tally"
            try map.set(mirror, value: try Envelope.wrapping(state, session: "s1", writer: "vm-tally/0", incarnation: 1, keyVersion: version).encoded())
        }
        // Changes arrive in order: once the last success is recorded, every state was seen.
        #expect(await eventually { records().last?.handled["tally"] == 5 })
        let written = Array(records().dropFirst(started))
        #expect(written.map { $0.handled["tally"] ?? 0 } == [3, 5])
        #expect(written.map { $0.context["tallied"] ?? "" } == ["1", "2"])
        #expect(written.last?.pending.count == 2)
    }
}
