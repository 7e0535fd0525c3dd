@testable import FlowKit
import FlowProtocol
import Synchronization
import Testing

/// A root flow of two screens, each with a view model: `swap` replaces one with the other, so
/// each swap makes the owner tell one view model to `appear` and the other to `reset`.
final class SwapAppCoordinator: Coordinator {
    override class var name: String { "app" }
    override class var screenActions: [String: [ActionSpec]] { ["one": ["swap"], "two": ["swap"]] }

    override func start() {
        navigate(.setRoot([.make("one", owner: "app")]))
    }

    override func handle(intent: IntentInput) throws(IntentRefusal) {
        guard intent.action == "swap" else { throw .unknownAction(intent.action, screen: intent.screen, known: Self.actionNames) }
        navigate(.setRoot([.make(intent.screen == "one" ? "two" : "one", owner: "app")]))
    }
}

/// Two tabs, `one` selected and `three` never; `leave` replaces them with `two`.
final class TabsAppCoordinator: Coordinator {
    override class var name: String { "app" }
    override class var screenActions: [String: [ActionSpec]] { ["one": ["leave"], "three": ["leave"], "two": []] }

    override func start() {
        navigate(.setRootTabs([("first", [.make("one", owner: "app")]), ("second", [.make("three", owner: "app")])], selected: "first"))
    }

    override func handle(intent: IntentInput) throws(IntentRefusal) {
        guard intent.action == "leave" else { throw .unknownAction(intent.action, screen: intent.screen, known: Self.actionNames) }
        navigate(.setRoot([.make("two", owner: "app")]))
    }
}

/// What the owner posted to view models, and on which lane; nothing is sent anywhere.
final class LaneRecordingCalls: ServiceCalls, @unchecked Sendable {
    struct Post: Equatable {
        var service: String
        var action: String
        var lane: String
    }

    let posts = Mutex<[Post]>([])
    /// Answers to `appear`s not given yet (`answersAppears` false).
    let unanswered = Mutex<[@Sendable (Result<[UInt8], ServiceTransportError>) -> Void]>([])
    /// Whether each `appear` is answered as it is posted, as a view model answers it on the bus.
    let answersAppears: Bool

    init(answersAppears: Bool = true) {
        self.answersAppears = answersAppears
    }

    func post(service: String, body: [UInt8], lane: String, tries: Int, answer: @escaping @Sendable (Result<[UInt8], ServiceTransportError>) -> Void) {
        let action = (try? Envelope.decodeChecked(body).unwrap(Flowbus_V1_Intent.self).action) ?? "?"
        posts.withLock { $0.append(Post(service: service, action: action, lane: lane)) }
        guard action == "appear" else { return }
        if answersAppears { answer(.success([])) } else { unanswered.withLock { $0.append(answer) } }
    }

    /// Answers the `appear`s posted so far.
    func answerAppears() {
        for answer in unanswered.withLock({ pending in defer { pending.removeAll() }; return pending }) { answer(.success([])) }
    }

    var actions: [String] { posts.withLock { $0 }.map { "\($0.service) \($0.action)" } }
    func waitUntilIdle(lane: String?, timeout: Duration) -> Bool { true }
    func request(service: String, body: [UInt8]) throws(ServiceTransportError) -> [UInt8] {
        throw ServiceTransportError(service: service, reason: "not sent in this test")
    }
    func stop() {}
}

@Suite("The owner's calls to view models")
struct ViewModelLaneTests {
    /// A started navigation owner of `coordinator` whose calls to view models `recorder` keeps.
    static func owner(
        _ coordinator: Coordinator.Type, map: MemoryStateMap, bus: InProcessBus, recorder: LaneRecordingCalls
    ) throws -> CoordinatorRuntime {
        let owner = try CoordinatorRuntime(
            coordinator: coordinator, navigationOwner: true, writer: "coord-app/0", incarnation: 1,
            map: map.peer(), calls: bus.calls(name: "app"), viewModelCalls: recorder, logger: quiet)
        owner.start()
        return owner
    }

    /// `appear`, `reset` and `close` to one view model keep their order on one lane of the
    /// session; another view model's go on another lane, so the `appear` of the screen a person
    /// is waiting for is not queued behind the `reset` of the screen they left (on the bus, a
    /// view model answers `reset` only once its state is written: a millisecond and more).
    @Test func eachViewModelOfASessionHasALaneOfItsOwn() throws {
        let (map, bus, recorder) = (MemoryStateMap(), InProcessBus(), LaneRecordingCalls())
        let owner = try Self.owner(SwapAppCoordinator.self, map: map, bus: bus, recorder: recorder)
        defer { owner.shutdown() }
        let opened = try coordinatorReply(owner.respond(to: envelope(call("openSession"), session: "")))
        let session = try #require(opened.result["session"])
        // one → two → one → two, then the session closes on two.
        for (version, screen) in [(UInt64(1), "one"), (2, "two"), (3, "one")] {
            let swapped = try intentReply(owner.respond(to: envelope(intent("swap", screen: screen, version: version), session: session)))
            #expect(swapped.applied)
        }
        _ = owner.respond(to: envelope(call("closeSession"), session: session))

        let posts = recorder.posts.withLock { $0 }
        let one = posts.filter { $0.service == "vm.one" }
        let two = posts.filter { $0.service == "vm.two" }
        // The close reaches vm.one too: it was sent an `appear` in the session (here it never
        // published, nothing runs behind the recorder; on the bus it would have).
        #expect(one.map(\.action) == ["appear", "reset", "appear", "reset", "close"])
        #expect(two.map(\.action) == ["appear", "reset", "appear", "close"])
        // One lane per view model of the session, naming the session, and not the other's.
        #expect(Set(one.map(\.lane)) == ["\(session)/one"])
        #expect(Set(two.map(\.lane)) == ["\(session)/two"])
    }

    /// Only view models with something of the session to reset are reset when their screens
    /// leave: the selected tab's, sent an `appear`; the other tab's root was never shown, so its
    /// view model gets nothing (a `reset` would make it publish an empty state of its own).
    /// One that published a state of the session is reset, though the owner never sent it an
    /// `appear` (a previous incarnation did).
    @Test func aTabNeverShownIsNotResetWhenItLeaves() async throws {
        let (map, bus, recorder) = (MemoryStateMap(), InProcessBus(), LaneRecordingCalls())
        let owner = try Self.owner(TabsAppCoordinator.self, map: map, bus: bus, recorder: recorder)
        defer { owner.shutdown() }
        let session = try #require(try coordinatorReply(owner.respond(to: envelope(call("openSession"), session: ""))).result["session"])
        let left = try intentReply(owner.respond(to: envelope(intent("leave", screen: "one", version: 1), session: session)))
        #expect(left.applied)
        let posts = recorder.posts.withLock { $0 }.map { "\($0.service) \($0.action)" }
        #expect(posts == ["vm.one appear", "vm.two appear", "vm.one reset"])

        // A second session whose `three` published (an older owner had shown it): reset it.
        let other = try #require(try coordinatorReply(owner.respond(to: envelope(call("openSession"), session: ""))).result["session"])
        let id = try SessionID(other)
        try map.set(.viewModel(id, try ScreenName("three")), value: [1])
        #expect(await eventually { owner.state.withLock { owner.viewModelKinds(of: id, in: $0) }.contains("three") })
        recorder.posts.withLock { $0.removeAll() }
        #expect(try intentReply(owner.respond(to: envelope(intent("leave", screen: "one", version: 1), session: other))).applied)
        #expect(Set(recorder.posts.withLock { $0 }.map { "\($0.service) \($0.action)" }) == ["vm.two appear", "vm.one reset", "vm.three reset"])
    }

    /// A started owner of `coordinator` whose view models never answer an `appear` until told
    /// (`answerAppears`), holding resets `nanoseconds` at most, and a session it opened.
    static func ownerWithUnansweredAppears(
        _ coordinator: Coordinator.Type, holdingResetsFor nanoseconds: Int64
    ) throws -> (CoordinatorRuntime, LaneRecordingCalls, String) {
        let recorder = LaneRecordingCalls(answersAppears: false)
        let owner = try owner(coordinator, map: MemoryStateMap(), bus: InProcessBus(), recorder: recorder)
        owner.resetHoldLimitNanoseconds.store(nanoseconds, ordering: .relaxed)
        let session = try #require(try coordinatorReply(owner.respond(to: envelope(call("openSession"), session: ""))).result["session"])
        return (owner, recorder, session)
    }

    /// Issue 16: the screens that left are reset once the screen that came has answered its
    /// `appear`, not beside it: a reset makes its view model publish an empty state, which every
    /// follower of the session takes in, and three or four of them at once (a signed-in flow
    /// ending) took the two CPUs from the first state of the screen a person waits for.
    @Test func theResetsOfScreensThatLeftWaitForTheAppearsAnswer() throws {
        let (owner, recorder, session) = try Self.ownerWithUnansweredAppears(TabsAppCoordinator.self, holdingResetsFor: 60_000_000_000)
        defer { owner.shutdown() }
        #expect(try intentReply(owner.respond(to: envelope(intent("leave", screen: "one", version: 1), session: session))).applied)
        #expect(recorder.actions == ["vm.one appear", "vm.two appear"])
        #expect(owner.heldResetCount == 1 && owner.resetsHeld.load(ordering: .relaxed) == 1)
        recorder.answerAppears()
        #expect(recorder.actions == ["vm.one appear", "vm.two appear", "vm.one reset"])
        #expect(owner.heldResetCount == 0 && owner.resetsSentEarly.load(ordering: .relaxed) == 0)
    }

    /// A held reset still goes before anything sent to its view model after it: swapped back
    /// before the `appear` was answered, the screen's view model is reset, then told to appear,
    /// in that order on its lane. A session closed with a reset held drops it (`close` deletes
    /// what it would empty).
    @Test func aHeldResetGoesBeforeTheNextMessageToItsViewModel() throws {
        let (owner, recorder, session) = try Self.ownerWithUnansweredAppears(SwapAppCoordinator.self, holdingResetsFor: 60_000_000_000)
        defer { owner.shutdown() }
        #expect(try intentReply(owner.respond(to: envelope(intent("swap", screen: "one", version: 1), session: session))).applied)
        #expect(recorder.actions == ["vm.one appear", "vm.two appear"])
        #expect(try intentReply(owner.respond(to: envelope(intent("swap", screen: "two", version: 2), session: session))).applied)
        #expect(recorder.actions == ["vm.one appear", "vm.two appear", "vm.one reset", "vm.one appear"])
        #expect(owner.resetsSentEarly.load(ordering: .relaxed) == 1 && owner.heldResetCount == 1)
        let lanes = recorder.posts.withLock { $0 }.filter { $0.service == "vm.one" }.map(\.lane)
        #expect(Set(lanes) == ["\(session)/one"])
        // vm.two's reset is held; the close drops it and closes both.
        _ = owner.respond(to: envelope(call("closeSession"), session: session))
        #expect(owner.heldResetCount == 0)
        #expect(Array(recorder.actions.dropFirst(4)).sorted() == ["vm.one close", "vm.two close"])
        // An answer that comes after the close releases nothing.
        recorder.answerAppears()
        #expect(!recorder.actions.contains("vm.two reset"))
    }

    /// An `appear` not answered (its view model down: it is tried for 20 s) holds the resets for
    /// `resetHoldLimitNanoseconds` at most; then they go.
    @Test func aResetWaitsForAnUnansweredAppearOnlySoLong() async throws {
        let (owner, recorder, session) = try Self.ownerWithUnansweredAppears(TabsAppCoordinator.self, holdingResetsFor: 50_000_000)
        defer { owner.shutdown() }
        #expect(try intentReply(owner.respond(to: envelope(intent("leave", screen: "one", version: 1), session: session))).applied)
        #expect(await eventually { recorder.actions == ["vm.one appear", "vm.two appear", "vm.one reset"] })
        #expect(owner.heldResetCount == 0)
    }
}
