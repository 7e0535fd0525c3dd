@testable import FlowKit
import FlowProtocol
import Foundation
import Logging
import SwiftProtobuf
import Synchronization
import Testing

// The runtimes' rules, tested without processes: each runtime runs over a `MemoryStateMap` peer
// (its Clone agent) and reaches the others through an `InProcessBus` (its MDP calls). The app is
// made up: a tally screen served by a view model, and a ledger flow with screens of its own.

/// The tally screen: `add` adds `amount` (a number) to the total, shown as an Int64Value.
final class TallyViewModel: ViewModel {
    override class var screen: String { "tally" }
    override class var actions: [ActionSpec] { [ActionSpec("add", fields: ["amount"])] }
    /// How many times `add` ran in this process, whatever the bus says.
    nonisolated(unsafe) static var applied = 0

    var total: Int64 { shown(Google_Protobuf_Int64Value.self)?.value ?? 0 }

    override func handle(_ intent: IntentInput) throws(IntentRefusal) {
        switch intent.action {
        case "add":
            guard let amount = Int64(intent.field("amount")) else {
                state = .error("The amount must be a whole number.")
                return
            }
            Self.applied += 1
            state = .success(ScreenPayload(Google_Protobuf_Int64Value(total + amount)))
        case "load":
            state = .loading
        default:
            try super.handle(intent)
        }
    }
}

/// The root flow: shows the tally screen; `ledger` starts the ledger flow.
final class TallyAppCoordinator: Coordinator {
    override class var name: String { "app" }
    override class var screenActions: [String: [ActionSpec]] { ["tally": ["ledger", "note"], "note": ["close"]] }

    override func start() {
        navigate(.setRoot([.make("tally", owner: "app")]))
    }

    override func handle(intent: IntentInput) throws(IntentRefusal) {
        switch intent.action {
        case "ledger": startChild("ledger")
        // A sheet over the tally screen, and its dismissal.
        case "note": navigate(.present(.make("note", owner: "app", viewModel: false)))
        case "close": navigate(.dismiss)
        default: throw .unknownAction(intent.action, screen: intent.screen, known: Self.actionNames)
        }
    }

    override func handle(call method: String, args: [String: String]) throws(IntentRefusal) -> [String: String] {
        guard method == "ledgerDone" else { return try super.handle(call: method, args: args) }
        finishChild("ledger")
        navigate(.popToRoot())
        return [:]
    }
}

/// A child flow whose screens have no view model: `more` pushes an entry, `done` reports back.
final class LedgerCoordinator: Coordinator {
    override class var name: String { "ledger" }
    override class var screenActions: [String: [ActionSpec]] { ["ledger": ["more", "done"], "entry": ["done"]] }

    override func start() {
        navigate(.push(.make("ledger", owner: "ledger", viewModel: false)))
    }

    override func handle(intent: IntentInput) throws(IntentRefusal) {
        switch intent.action {
        case "more": navigate(.push(.make("entry", owner: "ledger", viewModel: false)))
        case "done": report("ledgerDone")
        default: throw .unknownAction(intent.action, screen: intent.screen, known: Self.actionNames)
        }
    }
}

let quiet = Logger(label: "flowbus.test", factory: { _ in SwiftLogNoOpLogHandler() })

func envelope(_ message: some SwiftProtobuf.Message, session: String, key: String = "", writer: String = "client/1", incarnation: UInt64 = 0) -> Envelope {
    try! Envelope.wrapping(message, session: session, idempotencyKey: key, writer: writer, incarnation: incarnation)
}

func intent(_ action: String, screen: String, fields: [String: String] = [:], version: UInt64 = 0) -> Flowbus_V1_Intent {
    var intent = Flowbus_V1_Intent()
    intent.action = action
    intent.screen = screen
    intent.fields = fields
    intent.screenVersion = version
    return intent
}

func call(_ method: String, args: [String: String] = [:], expected: UInt64 = 0) -> Flowbus_V1_CoordinatorCall {
    var call = Flowbus_V1_CoordinatorCall()
    call.method = method
    call.args = args
    call.expectedNavVersion = expected
    return call
}

func intentReply(_ envelope: Envelope) throws -> Flowbus_V1_IntentReply {
    try envelope.unwrap(Flowbus_V1_IntentReply.self)
}

func coordinatorReply(_ envelope: Envelope) throws -> Flowbus_V1_CoordinatorReply {
    try envelope.unwrap(Flowbus_V1_CoordinatorReply.self)
}

func viewState(_ map: MemoryStateMap, session: String, screen: String = "tally") -> Flowbus_V1_ViewState? {
    guard let bytes = map.value(at: .viewModel(try! SessionID(session), try! ScreenName(screen))) else { return nil }
    return try? Envelope.decodeChecked(bytes).unwrap(Flowbus_V1_ViewState.self)
}

func navigation(_ map: MemoryStateMap, session: String) -> Navigation? {
    guard let bytes = map.value(at: .navigation(try! SessionID(session))) else { return nil }
    return try? Envelope.decodeChecked(bytes).unwrap(Navigation.self)
}

func total(_ state: Flowbus_V1_ViewState?) -> Int64? {
    state?.shownPayload?.decode(Google_Protobuf_Int64Value.self)?.value
}

/// Polls `condition` for up to 3 s.
func eventually(_ condition: () -> Bool) async -> Bool {
    for _ in 0..<300 {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}

func tallyRuntime(_ map: MemoryStateMap, writer: String = "vm-tally/0", incarnation: UInt64 = 1) throws -> ViewModelRuntime {
    let runtime = try ViewModelRuntime(screen: "tally", writer: writer, incarnation: incarnation, map: map, logger: quiet) {
        TallyViewModel(session: $0)
    }
    runtime.start()
    return runtime
}

@Suite("View-model runtime without processes", .serialized)
struct ViewModelRuntimeSeamTests {
    @Test func aRepeatedIdempotencyKeyIsAnsweredWithoutApplyingAgain() throws {
        TallyViewModel.applied = 0
        let map = MemoryStateMap()
        let runtime = try tallyRuntime(map)
        let request = envelope(intent("add", screen: "tally", fields: ["amount": "5"]), session: "s1", key: "k1")
        let first = try intentReply(runtime.handle(request))
        let second = try intentReply(runtime.handle(request))
        #expect(first.applied && second.applied)
        #expect(second.screenVersion == first.screenVersion)
        #expect(TallyViewModel.applied == 1)
        #expect(total(viewState(map, session: "s1")) == 5)
        // Once more with a new key: applied again.
        _ = runtime.handle(envelope(intent("add", screen: "tally", fields: ["amount": "5"]), session: "s1", key: "k2"))
        #expect(total(viewState(map, session: "s1")) == 10)
    }

    /// A replica knows the last action on a session by the key its state carries on the bus, even
    /// when another replica applied it: a retry of it reaching this one is answered "applied", not
    /// run again. A value under the state's key that is no view state gives no key.
    @Test func aReplicaAnswersARetryOfTheLastActionFromTheStatesKey() throws {
        TallyViewModel.applied = 0
        let map = MemoryStateMap()
        let first = try tallyRuntime(map, writer: "vm-tally/0")
        let second = try tallyRuntime(map.peer(), writer: "vm-tally/1")
        let made = try intentReply(first.handle(envelope(intent("add", screen: "tally", fields: ["amount": "5"]), session: "s1", key: "k1")))
        // The next action goes to the other replica; its retry comes back to the first, made on the
        // version the person saw.
        let add = intent("add", screen: "tally", fields: ["amount": "2"], version: made.screenVersion)
        #expect(try intentReply(second.handle(envelope(add, session: "s1", key: "k2"))).applied)
        #expect(TallyViewModel.applied == 2 && total(viewState(map, session: "s1")) == 7)
        let retry = try intentReply(first.handle(envelope(add, session: "s1", key: "k2")))
        #expect(retry.applied, "\(retry)")
        #expect(TallyViewModel.applied == 2, "the retry of the last action ran again")
        #expect(total(viewState(map, session: "s1")) == 7)

        // The state's key holding something else (here, another kind of message): no key is read
        // from it, and the action runs.
        _ = try intentReply(first.handle(envelope(intent("add", screen: "tally", fields: ["amount": "1"]), session: "s2", key: "k8")))
        let foreign = try Envelope.wrapping(Google_Protobuf_StringValue("x"), session: "s2", idempotencyKey: "k9", writer: "elsewhere").encoded()
        map.inject(.screenMirror(try ScreenName("tally"), try SessionID("s2")), value: foreign)
        _ = try intentReply(first.handle(envelope(intent("add", screen: "tally", fields: ["amount": "1"]), session: "s2", key: "k9")))
        #expect(TallyViewModel.applied == 4, "a key read from a value that is no view state answered the action")
    }

    /// The planted bug the chaos checker must catch: with it, a repeated key is applied again.
    @Test func withTheSkipIdempotencyBugPlantedARepeatedKeyIsAppliedTwice() throws {
        let map = MemoryStateMap()
        let runtime = try tallyRuntime(map)
        runtime.plantedBug = .skipIdempotency
        let request = envelope(intent("add", screen: "tally", fields: ["amount": "5"], version: 1), session: "s1", key: "k1")
        let first = try intentReply(runtime.handle(request))
        let second = try intentReply(runtime.handle(request))
        #expect(first.applied && second.applied && second.screenVersion != first.screenVersion)
        #expect(total(viewState(map, session: "s1")) == 10)
    }

    /// A lifecycle action the navigation owner sent before it was replaced, delivered after its
    /// new incarnation spoke, is fenced off: it could reset the new incarnation's screen.
    @Test func aLifecycleActionFromAReplacedIncarnationIsFencedOff() throws {
        let runtime = try tallyRuntime(MemoryStateMap())
        let newer = try intentReply(runtime.handle(envelope(intent("appear", screen: "tally"), session: "s1", key: "a", writer: "coord-app/0", incarnation: 3)))
        let older = try intentReply(runtime.handle(envelope(intent("reset", screen: "tally"), session: "s1", key: "r", writer: "coord-app/0", incarnation: 2)))
        #expect(newer.applied)
        #expect(!older.applied && older.error.code == .fenced, "\(older)")
        #expect(older.error.message.contains("coord-app/0 incarnation 2 was replaced by incarnation 3"))
        // The same incarnation, and a client (no incarnation), are not fenced.
        #expect(try intentReply(runtime.handle(envelope(intent("reset", screen: "tally"), session: "s1", key: "r2", writer: "coord-app/0", incarnation: 3))).applied)
    }

    @Test func anIntentMadeOnAnOlderVersionIsRefusedAsStaleAndChangesNothing() throws {
        let map = MemoryStateMap()
        let runtime = try tallyRuntime(map)
        _ = runtime.handle(envelope(intent("add", screen: "tally", fields: ["amount": "1"]), session: "s1", key: "a"))
        _ = runtime.handle(envelope(intent("add", screen: "tally", fields: ["amount": "1"]), session: "s1", key: "b"))
        let now = try #require(viewState(map, session: "s1")).screenVersion
        #expect(now == 2)
        let stale = try intentReply(runtime.handle(
            envelope(intent("add", screen: "tally", fields: ["amount": "100"], version: 1), session: "s1", key: "c")))
        #expect(!stale.applied)
        #expect(stale.error.code == .staleIntent)
        #expect(stale.screenVersion == 2)
        #expect(total(viewState(map, session: "s1")) == 2)
        #expect(runtime.counters.refused == 1)
        // Made on the current version: applied.
        let current = try intentReply(runtime.handle(
            envelope(intent("add", screen: "tally", fields: ["amount": "3"], version: 2), session: "s1", key: "d")))
        #expect(current.applied && current.screenVersion == 3)
    }

    @Test func aRestartedWorkerCarriesOnFromTheMapAndRemembersTheLastKey() throws {
        TallyViewModel.applied = 0
        let map = MemoryStateMap()
        let firstAgent = map.peer()
        let first = try tallyRuntime(firstAgent, incarnation: 1)
        _ = first.handle(envelope(intent("add", screen: "tally", fields: ["amount": "4"]), session: "s1", key: "k1"))
        let last = envelope(intent("add", screen: "tally", fields: ["amount": "6"]), session: "s1", key: "k2")
        let before = try intentReply(first.handle(last))
        firstAgent.stop()

        // A new process over the same map: it never saw the session.
        let second = try tallyRuntime(map.peer(), incarnation: 2)
        let retried = try intentReply(second.handle(last))
        #expect(retried.applied && retried.screenVersion == before.screenVersion)
        #expect(TallyViewModel.applied == 2)
        let next = try intentReply(second.handle(envelope(intent("add", screen: "tally", fields: ["amount": "1"]), session: "s1", key: "k3")))
        #expect(next.applied && next.screenVersion == before.screenVersion + 1)
        #expect(total(viewState(map, session: "s1")) == 11)
    }

    /// An `appear` answered, then the screen's state moved on (a person's action), then the view
    /// model restarted: the same `appear` sent again (a try held up on the way) is answered as
    /// the first time, from the state's `appear_version`, and runs nothing again.
    @Test func aRestartedWorkerAnswersAnAppearItRanBeforeAsTheFirstTime() throws {
        TallyViewModel.applied = 0
        let map = MemoryStateMap()
        let firstAgent = map.peer()
        let first = try tallyRuntime(firstAgent, incarnation: 1)
        var shown = intent("appear", screen: "tally")
        shown.screenID = "tally"
        let appear = envelope(shown, session: "s1", key: "appear/s1/tally/1", writer: "coord-app/0", incarnation: 1)
        let answered = try intentReply(first.handle(appear))
        #expect(answered.applied)
        let add = envelope(intent("add", screen: "tally", fields: ["amount": "5"]), session: "s1", key: "k-add")
        #expect(try intentReply(first.handle(add)).screenVersion > answered.screenVersion)
        let moved = try #require(viewState(map, session: "s1"))
        #expect(moved.appearKey == "appear/s1/tally/1" && moved.appearVersion == answered.screenVersion)
        firstAgent.stop()

        let second = try tallyRuntime(map.peer(), incarnation: 2)
        let again = try intentReply(second.handle(appear))
        #expect(again.applied && again.screenVersion == answered.screenVersion, "first \(answered.screenVersion), again \(again.screenVersion)")
        #expect(viewState(map, session: "s1")?.screenVersion == moved.screenVersion, "the appear ran again")
        #expect(total(viewState(map, session: "s1")) == 5)
    }

    @Test func aLoadLeftUnfinishedByThisWriterBecomesAnErrorAfterTheRestart() throws {
        let map = MemoryStateMap()
        let firstAgent = map.peer()
        let first = try tallyRuntime(firstAgent)
        _ = first.handle(envelope(intent("load", screen: "tally"), session: "s1", key: "k1"))
        #expect(viewState(map, session: "s1")?.phase == .loading)
        firstAgent.stop()
        _ = try tallyRuntime(map.peer())
        let after = try #require(viewState(map, session: "s1"))
        #expect(after.phase == .error)
        #expect(after.message.contains("interrupted by a restart"))
        // The same state under the screen tree: both keys stay equal.
        let mirror = try #require(map.value(at: .screenMirror(try ScreenName("tally"), try SessionID("s1"))))
        #expect(try Envelope.decodeChecked(mirror).unwrap(Flowbus_V1_ViewState.self) == after)
    }

    /// A `load` (key k1) of session s1 left in `loading` by a process that stopped, and the
    /// process that replaced it; with the loading state's keys and values as the first one left them.
    func interruptedLoad() throws -> (map: MemoryStateMap, second: ViewModelRuntime, load: Envelope, leftLoading: [(CloneKey, [UInt8])]) {
        let map = MemoryStateMap()
        let firstAgent = map.peer()
        let first = try tallyRuntime(firstAgent)
        let load = envelope(intent("load", screen: "tally"), session: "s1", key: "k1")
        _ = first.handle(load)
        let copies = CloneKey.viewModelKeys(session: try SessionID("s1"), screen: try ScreenName("tally"))
        let leftLoading = copies.compactMap { key in map.value(at: key).map { (key, $0) } }
        firstAgent.stop()
        return (map, try tallyRuntime(map.peer()), load, leftLoading)
    }

    /// A client whose action was cut short by the restart sends it again with the same key: the
    /// new process runs it, rather than answering "applied" for an action that never finished.
    @Test func theRetryOfAnActionARestartInterruptedRunsItAgain() throws {
        let (map, second, load, _) = try interruptedLoad()
        #expect(viewState(map, session: "s1")?.phase == .error)
        let retried = try intentReply(second.handle(load))
        #expect(retried.applied)
        #expect(viewState(map, session: "s1")?.phase == .loading, "the retried load runs again: \(String(describing: viewState(map, session: "s1")))")
    }

    /// On the real bus the interrupted loading state, with the action's key, can reach the map
    /// again after the restart (the new process writes its session copy again from the mirror,
    /// and the error after it): the retry must still run the action, not be answered "applied"
    /// because the state on the bus carries its key. (A movies chaos run stayed on sign-in so.)
    @Test func theRetryOfAnInterruptedActionRunsThoughTheBusStillShowsItsKey() throws {
        let (map, second, load, leftLoading) = try interruptedLoad()
        #expect(viewState(map, session: "s1")?.phase == .error)
        for (key, value) in leftLoading { map.inject(key, value: value) }
        let shown = try #require(viewState(map, session: "s1"))
        #expect(shown.phase == .loading)
        let retried = try intentReply(second.handle(load))
        #expect(retried.applied)
        let after = try #require(viewState(map, session: "s1"))
        #expect(after.screenVersion > shown.screenVersion, "the retry was answered without running: \(after)")
    }

    /// The interruption's error moved the screen to a newer version than the one the client
    /// acted on: its retry still runs (it is not stale; nothing the person saw was replaced by
    /// another action), once. After another action, a late retry is stale as any other.
    @Test func theRetryOfAnInterruptedActionIsNotRefusedAsStale() throws {
        let map = MemoryStateMap()
        let firstAgent = map.peer()
        let first = try tallyRuntime(firstAgent)
        _ = first.handle(envelope(intent("add", screen: "tally", fields: ["amount": "1"]), session: "s1", key: "k0"))
        let shown = try #require(viewState(map, session: "s1")).screenVersion
        let load = envelope(intent("load", screen: "tally", version: shown), session: "s1", key: "k1")
        _ = first.handle(load)
        firstAgent.stop()
        let second = try tallyRuntime(map.peer())
        let error = try #require(viewState(map, session: "s1"))
        #expect(error.phase == .error && error.screenVersion > shown)
        let retried = try intentReply(second.handle(load))
        #expect(retried.applied, "the retry of the interrupted action was refused: \(retried.error)")
        #expect(viewState(map, session: "s1")?.phase == .loading)
        // Another action, then a late copy of an older one: refused as stale.
        let now = try #require(viewState(map, session: "s1")).screenVersion
        #expect(try intentReply(second.handle(envelope(intent("add", screen: "tally", fields: ["amount": "2"], version: now), session: "s1", key: "k2"))).applied)
        let late = try intentReply(second.handle(envelope(intent("load", screen: "tally", version: shown), session: "s1", key: "k3")))
        #expect(!late.applied && late.error.code == .staleIntent)
    }

    /// A process killed after writing a state's mirror and before its session copy reached the
    /// server: restarted, it writes the session copy again from the mirror (its own states only).
    @Test func aRestartWritesAgainTheSessionCopyItsMirrorHolds() throws {
        let map = MemoryStateMap()
        let firstAgent = map.peer()
        let first = try tallyRuntime(firstAgent)
        let other = try tallyRuntime(map.peer(), writer: "vm-tally/1")
        _ = first.handle(envelope(intent("add", screen: "tally", fields: ["amount": "3"]), session: "s1", key: "k1"))
        _ = other.handle(envelope(intent("add", screen: "tally", fields: ["amount": "4"]), session: "s2", key: "k1"))
        let mirror = try #require(map.value(at: .screenMirror(try ScreenName("tally"), try SessionID("s1"))))
        // The session copies are lost (s1) or older (s2): as if the writes never reached the server.
        map.inject(.viewModel(try SessionID("s1"), try ScreenName("tally")), value: [])
        let s2Copy = try #require(map.value(at: .viewModel(try SessionID("s2"), try ScreenName("tally"))))
        map.inject(.viewModel(try SessionID("s2"), try ScreenName("tally")), value: [])
        firstAgent.stop()
        _ = try tallyRuntime(map.peer())
        #expect(map.value(at: .viewModel(try SessionID("s1"), try ScreenName("tally"))) == mirror)
        #expect(total(viewState(map, session: "s1")) == 3)
        #expect(map.value(at: .viewModel(try SessionID("s2"), try ScreenName("tally"))) == nil, "another replica's state was written: \(s2Copy.count) bytes")
    }

    @Test func anotherWritersLoadIsLeftAlone() throws {
        let map = MemoryStateMap()
        let other = try tallyRuntime(map.peer(), writer: "vm-tally/1")
        _ = other.handle(envelope(intent("load", screen: "tally"), session: "s1", key: "k1"))
        _ = try tallyRuntime(map.peer(), writer: "vm-tally/0")
        #expect(viewState(map, session: "s1")?.phase == .loading)
    }

    @Test func closeDeletesBothKeysAndRepeatingItChangesNothing() throws {
        let map = MemoryStateMap()
        let runtime = try tallyRuntime(map)
        _ = runtime.handle(envelope(intent("add", screen: "tally", fields: ["amount": "1"]), session: "s1", key: "k1"))
        _ = runtime.handle(envelope(intent("add", screen: "tally", fields: ["amount": "1"]), session: "s2", key: "k1"))
        for _ in 0..<2 {
            #expect(try intentReply(runtime.handle(envelope(intent("close", screen: "tally"), session: "s1", key: "close"))).applied)
            #expect(map.entries(in: .session(try SessionID("s1"))).isEmpty)
            #expect(map.entries(in: .screen(try ScreenName("tally"))).map(\.key) == [.screenMirror(try ScreenName("tally"), try SessionID("s2"))])
        }
    }

    @Test func badRequestsAreAnsweredAndCountedNeverApplied() throws {
        let map = MemoryStateMap()
        let runtime = try tallyRuntime(map)
        let wrongKind = runtime.handle(envelope(call("start"), session: "s1"))
        #expect(try wrongKind.unwrap(WireError.self).code == .malformed)
        let noSession = try intentReply(runtime.handle(envelope(intent("add", screen: "tally", fields: ["amount": "1"]), session: "../x")))
        #expect(!noSession.applied && noSession.error.code == .invalidField)
        let unknown = try intentReply(runtime.handle(envelope(intent("explode", screen: "tally"), session: "s1")))
        #expect(!unknown.applied && unknown.error.message.contains("explode"))
        #expect(runtime.counters.malformed == 1)
        #expect(runtime.counters.refused == 2)
        #expect(map.writes.isEmpty)
    }

    @Test func everyStateCarriesTheDeclaredActions() throws {
        let map = MemoryStateMap()
        let runtime = try tallyRuntime(map)
        _ = runtime.handle(envelope(intent("add", screen: "tally", fields: ["amount": "2"]), session: "s1", key: "k1"))
        let state = try #require(viewState(map, session: "s1"))
        #expect(state.actions.map(\.name) == ["add"])
        #expect(state.actions.first?.service == "vm.tally")
        #expect(state.actions.first?.fields == ["amount"])
    }
}

/// A clock that moves only when told.
final class ManualClock: Sendable {
    let instant = Mutex(ContinuousClock.now)
    var now: ContinuousClock.Instant { instant.withLock { $0 } }
    func advance(_ duration: Duration) { instant.withLock { $0 += duration } }
}

final class UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// The made-up app on one in-memory bus: the navigation owner (coord.app), the ledger flow
/// (coord.ledger) and the tally view model (vm.tally).
final class TallyBus {
    let map = MemoryStateMap()
    let bus = InProcessBus()
    var owner: CoordinatorRuntime!
    var ledger: CoordinatorRuntime!
    var tally: ViewModelRuntime!
    /// How the latest owner calls view models: `waitUntilIdle` on it waits for what it sent.
    var ownerViewModelCalls: InProcessCalls!

    /// The owner's clock: tests move it to play idle time.
    let clock = ManualClock()
    let idleLimit: Duration?
    let limits: SessionLimits
    let plantedBug: PlantedBug?

    init(idleLimit: Duration? = nil, limits: SessionLimits = SessionLimits(), plantedBug: PlantedBug? = nil) throws {
        self.idleLimit = idleLimit
        self.limits = limits
        self.plantedBug = plantedBug
        owner = try startOwner(incarnation: 1)
        ledger = try CoordinatorRuntime(
            coordinator: LedgerCoordinator.self, peers: [TallyAppCoordinator.self], writer: "coord-ledger/0", incarnation: 1,
            map: map.peer(), calls: bus.calls(name: "ledger"), viewModelCalls: nil, logger: quiet)
        ledger.start()
        bus.register("coord.ledger") { [ledger] in ledger!.respond(to: $0) }
        tally = try tallyRuntime(map.peer())
        // The bus hands vm.tally one request at a time, as its one worker thread would.
        let box = UncheckedBox(tally!)
        bus.register("vm.tally") { box.value.handle($0) }
    }

    /// `calls`: how it calls other coordinators (the bus's, unless a test says otherwise).
    func startOwner(incarnation: UInt64, calls: (any ServiceCalls)? = nil) throws -> CoordinatorRuntime {
        ownerViewModelCalls = bus.calls(name: "app-vm")
        let owner = try CoordinatorRuntime(
            coordinator: TallyAppCoordinator.self, peers: [LedgerCoordinator.self], navigationOwner: true,
            writer: "coord-app/0", incarnation: incarnation, map: map.peer(), calls: calls ?? bus.calls(name: "app"),
            viewModelCalls: ownerViewModelCalls, sessionIdleLimit: idleLimit, sessionLimits: limits,
            clock: { [clock] in clock.now }, logger: quiet, plantedBug: plantedBug)
        // Reachable before it starts, as a worker is: calls it sends again when it starts are answered to it.
        bus.register("coord.app") { [owner] in owner.respond(to: $0) }
        owner.start()
        return owner
    }

    /// Restarts the owner (incarnation 2), then writes as `writer` the session's navigation one
    /// version past the one it restored (with `change` applied), as the previous incarnation's
    /// write held on the way arrives late; then a marker state behind it. The owner's copy of
    /// the map keeps no navigation: it notes the late one as it arrives, where it follows the
    /// session's changes, so once the marker is noted the navigation was too (changes come in order).
    func restartWithLateNavigation(
        session: String, writer: String, incarnation: UInt64, change: [NavigationOp] = []
    ) throws -> (restored: Navigation, late: Navigation, bytes: [UInt8]) {
        let id = try SessionID(session)
        let restored = try #require(navigation(map, session: session))
        owner.shutdown()
        owner = try startOwner(incarnation: 2)
        var late = restored
        _ = try late.apply(change)
        late.version = restored.version + 1
        let bytes = try Envelope.wrapping(late, session: session, writer: writer, incarnation: incarnation, keyVersion: late.version).encoded()
        try map.set(.navigation(id), value: bytes)
        try map.set(.viewModel(id, try ScreenName("marker")), value: [1])
        return (restored, late, bytes)
    }

    func open(_ requested: String = "", create: Bool = false, peer: String? = nil) throws -> Flowbus_V1_CoordinatorReply {
        var args = requested.isEmpty ? [:] : ["session": requested]
        if create { args["create"] = "true" }
        return try coordinatorReply(owner.respond(to: envelope(call("openSession", args: args), session: ""), peer: peer))
    }
}

/// Calls that never leave the process: as if it died before sending them.
final class SilentCalls: ServiceCalls, @unchecked Sendable {
    private(set) var posted: [String] = []
    func post(service: String, body: [UInt8], lane: String, tries: Int, answer: @escaping @Sendable (Result<[UInt8], ServiceTransportError>) -> Void) {
        posted.append(service)
    }
    func waitUntilIdle(lane: String?, timeout: Duration) -> Bool { true }
    func request(service: String, body: [UInt8]) throws(ServiceTransportError) -> [UInt8] {
        throw ServiceTransportError(service: service, reason: "this process is gone")
    }
    func stop() {}
}

@Suite("Coordinator runtime without processes", .serialized)
struct CoordinatorRuntimeSeamTests {
    @Test func openingASessionShowsItsFirstScreenWithItsActionsAndLetsItsViewModelAppear() async throws {
        let app = try TallyBus()
        let opened = try app.open()
        let session = try #require(opened.result["session"])
        #expect(opened.result["attached"] == nil)
        let nav = try #require(navigation(app.map, session: session))
        #expect(nav.version == 1)
        #expect(nav.topScreen?.kind == "tally")
        #expect(nav.topScreen?.actions.map(\.name) == ["ledger", "note"])
        #expect(nav.topScreen?.actions.first?.service == "coord.app")
        // The owner told vm.tally to appear; the view model published its state for the screen.
        #expect(await eventually { viewState(app.map, session: session)?.screenID == "tally" })
        #expect(app.bus.delivered(to: "vm.tally").compactMap { try? $0.unwrap(Flowbus_V1_Intent.self).action } == ["appear"])
        // Attaching again says so, with the version now.
        let again = try app.open(session)
        #expect(again.result["attached"] == "true" && again.navVersion == 1)
    }

    /// The record of a new session goes to the map once, whether the root's start changed it
    /// (here the idle limit the record carries) or left it as openSession made it (it was
    /// written twice, the second time the same, for every session the App coordinator opened).
    @Test(arguments: [Duration?.none, .seconds(60)])
    func aNewSessionsRecordIsWrittenOnce(idleLimit: Duration?) throws {
        let app = try TallyBus(idleLimit: idleLimit)
        let id = try SessionID(try #require(try app.open().result["session"]))
        let records = app.map.writes.compactMap { entry -> Flowbus_V1_SessionRecord? in
            guard entry.key == .sessionMeta(id), !entry.isDelete else { return nil }
            return try? Envelope.decodeChecked(entry.value).unwrap(Flowbus_V1_SessionRecord.self)
        }
        #expect(records.count == 1)
        #expect(records.first?.open == true && records.first?.session == id.text)
        #expect(records.first?.idleLimitSeconds == UInt32(idleLimit?.components.seconds ?? 0))
        #expect(records.first?.openedAtUnixNanos ?? 0 > 0)
    }

    @Test func aChildFlowsNavigationGoesThroughTheOwnerWhichRefusesAStaleOne() async throws {
        let app = try TallyBus()
        let session = try #require(try app.open().result["session"])
        let toLedger = try intentReply(app.owner.respond(to: envelope(intent("ledger", screen: "tally", version: 1), session: session)))
        #expect(toLedger.applied)
        #expect(await eventually { navigation(app.map, session: session)?.topScreen?.kind == "ledger" })
        let version = try #require(navigation(app.map, session: session)).version
        // `more` on the ledger: coord.ledger asks the owner and waits for its verdict.
        let more = try intentReply(app.ledger.respond(to: envelope(intent("more", screen: "ledger", version: version), session: session)))
        #expect(more.applied && more.screenVersion == version + 1)
        #expect(navigation(app.map, session: session)?.topScreen?.kind == "entry")
        // The same action made on the old version: the owner refuses it, nothing moves.
        let stale = try intentReply(app.ledger.respond(to: envelope(intent("more", screen: "ledger", version: version), session: session)))
        #expect(!stale.applied && stale.error.code == .staleIntent)
        #expect(navigation(app.map, session: session)?.version == version + 1)
        // `done` reports to the parent, which finishes the child and goes back to the tally.
        _ = app.ledger.respond(to: envelope(intent("done", screen: "entry"), session: session))
        #expect(await eventually { navigation(app.map, session: session)?.topScreen?.kind == "tally" })
        #expect(await eventually { app.map.value(at: .coordinatorInstance(try! CoordinatorName("ledger"), try! SessionID(session))) == nil })
    }

    /// A child flow's intent that only navigates leaves its record as it was, and it is not
    /// written again; one that reports to the parent (a call in its outbox) is.
    @Test func anIntentThatOnlyNavigatesWritesNoRecord() async throws {
        let app = try TallyBus()
        let session = try #require(try app.open().result["session"])
        #expect(try intentReply(app.owner.respond(to: envelope(intent("ledger", screen: "tally", version: 1), session: session))).applied)
        #expect(await eventually { navigation(app.map, session: session)?.topScreen?.kind == "ledger" })
        let key = CloneKey.coordinatorInstance(try CoordinatorName("ledger"), try SessionID(session))
        func records() -> Int { app.map.writes.filter { $0.key == key && !$0.isDelete }.count }
        #expect(await eventually { app.ledger.calls.waitUntilIdle(timeout: .seconds(1)) && records() > 0 })
        let before = records()
        let version = try #require(navigation(app.map, session: session)).version
        #expect(try intentReply(app.ledger.respond(to: envelope(intent("more", screen: "ledger", version: version), session: session))).applied)
        #expect(navigation(app.map, session: session)?.topScreen?.kind == "entry")
        #expect(records() == before)
        // `done` reports to the parent: a call the record must hold until it is answered.
        _ = app.ledger.respond(to: envelope(intent("done", screen: "entry"), session: session))
        #expect(records() > before)
    }

    @Test func callsFromAReplacedIncarnationAreFenced() throws {
        let app = try TallyBus()
        let session = try #require(try app.open().result["session"])
        let newer = try coordinatorReply(app.owner.respond(to: envelope(call("start"), session: session, writer: "coord-x/0", incarnation: 2)))
        #expect(newer.ok)
        let older = try coordinatorReply(app.owner.respond(to: envelope(call("start"), session: session, writer: "coord-x/0", incarnation: 1)))
        #expect(!older.ok && older.error.code == .fenced)
        #expect(older.error.message.contains("replaced by incarnation 2"))
        // Another writer is not affected, nor are clients (incarnation 0).
        #expect(try coordinatorReply(app.owner.respond(to: envelope(call("start"), session: session, writer: "coord-y/0", incarnation: 1))).ok)
        #expect(try coordinatorReply(app.owner.respond(to: envelope(call("start"), session: session, writer: "coord-x/0", incarnation: 0))).ok)
        #expect(app.owner.counters.fenced == 1)
    }

    /// The planted bug the chaos checker must catch: with it, the replaced incarnation's call is applied.
    @Test func withTheIgnoreFencingBugPlantedAReplacedIncarnationsCallIsApplied() throws {
        let app = try TallyBus(plantedBug: .ignoreFencing)
        let session = try #require(try app.open().result["session"])
        #expect(try coordinatorReply(app.owner.respond(to: envelope(call("start"), session: session, writer: "coord-x/0", incarnation: 2))).ok)
        #expect(try coordinatorReply(app.owner.respond(to: envelope(call("start"), session: session, writer: "coord-x/0", incarnation: 1))).ok)
        #expect(app.owner.counters.fenced == 0)
    }

    /// A call the owner applied comes again to its next incarnation (a duplicate, or a retry
    /// whose answer was lost when the owner was killed): the instance's record holds the call's
    /// key and answer beside what it changed, so it is answered as before and not applied again.
    @Test func aCallAppliedBeforeARestartIsAnsweredAsBeforeNotAppliedAgain() async throws {
        let app = try TallyBus()
        let session = try #require(try app.open().result["session"])
        _ = app.owner.respond(to: envelope(intent("ledger", screen: "tally", version: 1), session: session))
        #expect(await eventually { navigation(app.map, session: session)?.topScreen?.kind == "ledger" })
        let done = envelope(call("ledgerDone"), session: session, key: "coord-ledger/0/1/done-1", writer: "coord-ledger/0", incarnation: 1)
        let first = try coordinatorReply(app.owner.respond(to: done))
        #expect(first.ok)
        #expect(navigation(app.map, session: session)?.topScreen?.kind == "tally")
        // The session moves on: a note over the tally.
        let note = try intentReply(app.owner.respond(to: envelope(intent("note", screen: "tally", version: first.navVersion), session: session)))
        #expect(note.applied && note.screenVersion == first.navVersion + 1)
        app.owner.shutdown()

        let restarted = try app.startOwner(incarnation: 2)
        app.owner = restarted
        let again = try coordinatorReply(restarted.respond(to: done))
        #expect(again == first, "answered as the first time, at the version it made")
        #expect(restarted.counters.retriesAnswered == 1)
        #expect(navigation(app.map, session: session)?.version == note.screenVersion)
        #expect(navigation(app.map, session: session)?.modal.kind == "note")
    }

    /// The same call, applied by an incarnation whose writes were not confirmed (killed before
    /// they were): it never answered it, and what it wrote may not be in the map, so its record
    /// does not say it applied the call, and the next incarnation applies it again.
    @Test func aCallWhoseWritesWereNotConfirmedIsAppliedAgainAfterARestart() async throws {
        let app = try TallyBus()
        let session = try #require(try app.open().result["session"])
        _ = app.owner.respond(to: envelope(intent("ledger", screen: "tally", version: 1), session: session))
        #expect(await eventually { navigation(app.map, session: session)?.topScreen?.kind == "ledger" })
        let owner = try #require(app.owner)
        let map = try #require(owner.map as? MemoryStateMap)
        map.holdsConfirmations.store(true, ordering: .releasing)
        let done = envelope(call("ledgerDone"), session: session, key: "coord-ledger/0/1/done-2", writer: "coord-ledger/0", incarnation: 1)
        #expect(try coordinatorReply(owner.respond(to: done)).ok)
        owner.shutdown()

        let restarted = try app.startOwner(incarnation: 2)
        app.owner = restarted
        #expect(try coordinatorReply(restarted.respond(to: done)).ok)
        #expect(restarted.counters.retriesAnswered == 0, "applied again, not answered from a record")
    }

    /// A flow released while the calls it sent are not answered yet (here the owner's app flow,
    /// closed with the session, whose `finish` to its child never left the process) keeps its
    /// record, marked released, holding those calls: the next incarnation sends them again, so
    /// the child flow is finished instead of left live for good, and the record goes after.
    @Test func aReleasedFlowsUnansweredCallsAreSentAgainAfterARestart() async throws {
        let app = try TallyBus()
        let session = try #require(try app.open().result["session"])
        let id = try SessionID(session)
        let ledgerKey = CloneKey.coordinatorInstance(try CoordinatorName("ledger"), id)
        _ = app.owner.respond(to: envelope(intent("ledger", screen: "tally", version: 1), session: session))
        let appKey = CloneKey.coordinatorInstance(try CoordinatorName("app"), id)
        func appRecord() throws -> Flowbus_V1_CoordinatorInstance? {
            try app.map.value(at: appKey).map { try Envelope.decodeChecked($0).unwrap(Flowbus_V1_CoordinatorInstance.self) }
        }
        #expect(await eventually { app.map.value(at: ledgerKey) != nil && (try? appRecord())?.pending.isEmpty == true })
        app.owner.shutdown()
        let silent = SilentCalls()
        app.owner = try app.startOwner(incarnation: 2, calls: silent)
        #expect(try coordinatorReply(app.owner.respond(to: envelope(call("closeSession"), session: session))).ok)
        #expect(silent.posted == ["coord.ledger"], "the child's finish, which never left")

        let kept = try #require(try appRecord())
        #expect(kept.released && kept.children.isEmpty)
        #expect(try kept.pending.map { try Envelope.decodeChecked(Array($0.body)).unwrap(Flowbus_V1_CoordinatorCall.self).method } == ["finish"])

        app.owner.shutdown()
        app.owner = try app.startOwner(incarnation: 3)
        #expect(await eventually { app.map.value(at: ledgerKey) == nil }, "the child flow was finished")
        #expect(await eventually { app.map.value(at: appKey) == nil }, "the released record went with its last answer")
        #expect(navigation(app.map, session: session) == nil)
    }

    /// The owner was killed while it closed a session: the session record's delete reached the
    /// map, the navigation's did not. Its next incarnation finishes the close (the view model
    /// told `close` again under the same key, the navigation deleted) instead of taking the
    /// session for live and making its top screen appear again over a closed view model.
    @Test func aCloseCutShortByARestartIsFinishedNotAppearedAgain() async throws {
        let app = try TallyBus()
        let session = try #require(try app.open().result["session"])
        #expect(await eventually { viewState(app.map, session: session)?.screenID == "tally" })
        app.owner.shutdown()
        // What the closing owner left: the record deleted, the navigation still there.
        let sessionID = try SessionID(session)
        try app.map.peer().delete(.sessionMeta(sessionID))
        let before = app.bus.delivered(to: "vm.tally").count

        app.owner = try app.startOwner(incarnation: 2)
        #expect(await eventually { navigation(app.map, session: session) == nil })
        #expect(app.ownerViewModelCalls.waitUntilIdle(timeout: .seconds(5)))
        let sent = app.bus.delivered(to: "vm.tally").dropFirst(before).compactMap { try? $0.unwrap(Flowbus_V1_Intent.self).action }
        #expect(sent == ["close"], "\(sent)")
        #expect(viewState(app.map, session: session) == nil)
    }

    @Test func aRestartedOwnerResumesEverySessionFromTheMap() async throws {
        let app = try TallyBus()
        let session = try #require(try app.open().result["session"])
        _ = app.owner.respond(to: envelope(intent("ledger", screen: "tally", version: 1), session: session))
        #expect(await eventually { navigation(app.map, session: session)?.topScreen?.kind == "ledger" })
        let before = try #require(navigation(app.map, session: session))
        app.owner.shutdown()

        // kill -9 and restart: a new incarnation over the same map, nothing in memory.
        let restarted = try app.startOwner(incarnation: 2)
        app.owner = restarted
        let attached = try app.open(session)
        #expect(attached.result["attached"] == "true")
        #expect(attached.navVersion == before.version)
        // It carries on where the old one stopped: `back` pops the ledger screen.
        let back = try intentReply(restarted.respond(to: envelope(intent("back", screen: "ledger", version: before.version), session: session)))
        #expect(back.applied && back.screenVersion == before.version + 1)
        #expect(navigation(app.map, session: session)?.topScreen?.kind == "tally")
        // The new navigation is written by the new incarnation.
        let bytes = try #require(app.map.value(at: .navigation(try SessionID(session))))
        #expect(try Envelope.decodeChecked(bytes).incarnation == 2)
    }

    /// The owner was replaced while its last navigation was held on the way; it reached the map
    /// after the new incarnation restored. Clients see it and act on it: the new owner takes it
    /// up instead of refusing their intents as made on a version from the future. The same
    /// navigation written by anyone else is not taken up.
    @Test(arguments: [(writer: "coord-app/0", incarnation: UInt64(1), takenUp: true), (writer: "intruder/0", incarnation: UInt64(1), takenUp: false)])
    func aLateNavigationOfThePreviousIncarnationIsTakenUp(writer: String, incarnation: UInt64, takenUp: Bool) async throws {
        let app = try TallyBus()
        let sessionText = try #require(try app.open().result["session"])
        let session = try SessionID(sessionText)
        let (restored, late, bytes) = try app.restartWithLateNavigation(session: sessionText, writer: writer, incarnation: incarnation)
        let owner: CoordinatorRuntime = try #require(app.owner)
        #expect(await eventually { owner.state.withLock { owner.viewModelKinds(of: session, in: $0) }.contains("marker") })
        #expect(owner.map.value(at: .navigation(session)) == nil && app.map.value(at: .navigation(session)) == bytes)
        #expect(owner.state.withLock { $0.navigationsAhead[session] != nil } == takenUp)
        // A flow pushes a screen on the version it saw (the late one).
        var push = call("navigate", expected: late.version)
        push.ops = [.push(.make("entry", owner: "ledger", viewModel: false))]
        let reply = try coordinatorReply(app.owner.respond(to: envelope(push, session: sessionText, key: "k-late", writer: "coord-ledger/0", incarnation: 1)))
        if takenUp {
            #expect(reply.ok, "\(reply.error)")
            #expect(reply.navVersion == late.version + 1)
            #expect(navigation(app.map, session: sessionText)?.topScreen?.kind == "entry")
            // Its own next version replaced the late one on the map: the owner lets go of it.
            #expect(await eventually { owner.state.withLock { $0.navigationsAhead.isEmpty } })
        } else {
            #expect(!reply.ok && reply.error.code == .staleIntent && reply.navVersion == restored.version, "\(reply)")
        }
    }

    /// The same late navigation showed a modal, and the client closes it with `ok` on the version
    /// it saw: the owner reads `ok` against that navigation, where it said there was no modal.
    @Test func anOkOnALateNavigationOfThePreviousIncarnationClosesItsModal() async throws {
        let app = try TallyBus()
        let sessionText = try #require(try app.open().result["session"])
        let session = try SessionID(sessionText)
        let (_, late, _) = try app.restartWithLateNavigation(
            session: sessionText, writer: "coord-app/0", incarnation: 1, change: [.present(.make("note", owner: "app", viewModel: false))])
        let owner: CoordinatorRuntime = try #require(app.owner)
        #expect(await eventually { owner.state.withLock { $0.navigationsAhead[session] != nil } })
        let ok = try intentReply(owner.respond(to: envelope(intent("ok", screen: "note", version: late.version), session: sessionText, key: "k-ok-late")))
        #expect(ok.applied && ok.screenVersion == late.version + 1, "\(ok)")
        #expect(navigation(app.map, session: sessionText)?.hasModal == false)
    }

    /// The owner died after pushing a screen and before its `appear` reached the view model (the
    /// call waited in its memory): restarted, it sees no state for the top screen and sends it.
    @Test func aRestartedOwnerAppearsATopScreenWhoseAppearWasLost() async throws {
        let app = try TallyBus()
        let session = try #require(try app.open().result["session"])
        #expect(await eventually { viewState(app.map, session: session) != nil })
        app.owner.shutdown()
        // As if the appear had never arrived: the view model's state of the screen is gone, and
        // the view model (a fresh process) never saw it.
        for key in CloneKey.viewModelKeys(session: try SessionID(session), screen: try ScreenName("tally")) { try app.map.delete(key) }
        #expect(viewState(app.map, session: session) == nil)
        let fresh = UncheckedBox(try tallyRuntime(app.map.peer(), incarnation: 2))
        app.bus.register("vm.tally") { fresh.value.handle($0) }
        app.owner = try app.startOwner(incarnation: 2)
        #expect(await eventually { viewState(app.map, session: session)?.screenID == navigation(app.map, session: session)?.topScreen?.id })
    }

    /// The Photos `every-plugin` failure: `back` to a screen whose view model still shows the
    /// state of the screen's first `appear` (same screen id), and that `appear` lost with the
    /// owner. The restarted owner must send it again, though the view model shows a state for the
    /// screen; and once the state carries the key, a later restart sends nothing.
    @Test func aRestartedOwnerAppearsAScreenReturnedToWhoseAppearWasLost() async throws {
        let app = try TallyBus()
        let session = try #require(try app.open().result["session"])
        #expect(await eventually { viewState(app.map, session: session) != nil })
        let firstKey = try #require(viewState(app.map, session: session)).appearKey
        #expect(firstKey == "appear/\(session)/tally/1")
        _ = app.owner.respond(to: envelope(intent("ledger", screen: "tally", version: 1), session: session))
        #expect(await eventually { navigation(app.map, session: session)?.topScreen?.kind == "ledger" })
        // The view model is out of reach when the owner goes back: the `appear` is lost.
        app.bus.unregister("vm.tally")
        let pushed = try #require(navigation(app.map, session: session))
        let back = try intentReply(app.owner.respond(to: envelope(intent("back", screen: "ledger", version: pushed.version), session: session)))
        #expect(back.applied)
        let returned = try #require(navigation(app.map, session: session))
        #expect(returned.topScreen?.kind == "tally")
        #expect(returned.topAppearKey == "appear/\(session)/tally/\(returned.version)")
        #expect(viewState(app.map, session: session)?.appearKey == firstKey)
        // The owner posts its calls to view models on a queue of their own: the `appear` must
        // have failed before the view model is back, or it is not lost but late.
        #expect(app.ownerViewModelCalls.waitUntilIdle(timeout: .seconds(5)))
        app.owner.shutdown()

        let tally = UncheckedBox(try #require(app.tally))
        app.bus.register("vm.tally") { tally.value.handle($0) }
        app.owner = try app.startOwner(incarnation: 2)
        #expect(await eventually { viewState(app.map, session: session)?.appearKey == returned.topAppearKey })
        let appears = { app.bus.delivered(to: "vm.tally").filter { $0.idempotencyKey == returned.topAppearKey }.count }
        #expect(appears() == 1)
        app.owner.shutdown()
        app.owner = try app.startOwner(incarnation: 3)
        #expect(app.ownerViewModelCalls.waitUntilIdle(timeout: .seconds(5)))
        #expect(appears() == 1)
    }

    /// A coordinator answers an action whose effects are calls to others (a child flow started)
    /// before those calls are answered. Killed in between, it left them in its record's outbox:
    /// its next incarnation sends them again, as its own, and the child flow starts.
    @Test func callsAKilledCoordinatorHadNotSentAreSentByItsNextIncarnation() async throws {
        let app = try TallyBus()
        let session = try #require(try app.open().result["session"])
        #expect(await eventually { viewState(app.map, session: session) != nil })
        app.owner.shutdown()
        let silent = SilentCalls()
        app.owner = try app.startOwner(incarnation: 2, calls: silent)
        let started = try intentReply(app.owner.respond(to: envelope(intent("ledger", screen: "tally", version: 1), session: session, key: "k-ledger")))
        #expect(started.applied)
        #expect(silent.posted == ["coord.ledger"])
        // The start never left; the record holds it.
        #expect(navigation(app.map, session: session)?.topScreen?.kind == "tally")
        app.owner.shutdown()
        app.owner = try app.startOwner(incarnation: 3)
        #expect(await eventually { navigation(app.map, session: session)?.topScreen?.kind == "ledger" })
        // Sent as the new incarnation's: the ledger flow's owner took it (no fencing refusal).
        let starts = app.bus.delivered(to: "coord.ledger").compactMap { envelope -> UInt64? in
            (try? envelope.unwrap(Flowbus_V1_CoordinatorCall.self))?.method == "start" ? envelope.incarnation : nil
        }
        #expect(starts == [3])
    }

    /// A sheet dismissed leaves the screen under it as it was (no new `appear`); but if that
    /// screen's `appear` was lost (with an owner that died), it shows no state, and the dismissal
    /// must appear it, or the screen stays without its view model's actions for good.
    @Test func aScreenUncoveredWithoutItsStateAppearsAgain() async throws {
        let app = try TallyBus()
        let session = try #require(try app.open().result["session"])
        #expect(await eventually { viewState(app.map, session: session) != nil })
        _ = app.owner.respond(to: envelope(intent("note", screen: "tally", version: 1), session: session))
        #expect(await eventually { navigation(app.map, session: session)?.hasModal == true })
        for key in CloneKey.viewModelKeys(session: try SessionID(session), screen: try ScreenName("tally")) { try app.map.delete(key) }
        #expect(await eventually { viewState(app.map, session: session) == nil })
        let version = try #require(navigation(app.map, session: session)).version
        _ = app.owner.respond(to: envelope(intent("close", screen: "note", version: version), session: session))
        #expect(await eventually { viewState(app.map, session: session)?.screenID == navigation(app.map, session: session)?.topScreen?.id })
    }

    /// Attaching names a session that is open; a mistyped or closed id is refused, saying so,
    /// rather than opening a session of that name (issue 17). `create` asks for one.
    @Test func anUnknownSessionIdIsRefusedUnlessCreateAsksForIt() throws {
        let app = try TallyBus()
        let refused = try app.open("no-such-session")
        #expect(!refused.ok)
        #expect(refused.error.message.contains("no session no-such-session is open"), "\(refused.error)")
        #expect(refused.error.hint.contains("--create"))
        #expect(navigation(app.map, session: "no-such-session") == nil)
        let created = try app.open("no-such-session", create: true)
        #expect(created.ok && created.result["session"] == "no-such-session" && created.result["attached"] == nil)
        let attached = try app.open("no-such-session")
        #expect(attached.ok && attached.result["attached"] == "true")
    }

    @Test func closingASessionLeavesNoKeyOfIt() async throws {
        let app = try TallyBus()
        let session = try #require(try app.open().result["session"])
        #expect(await eventually { viewState(app.map, session: session) != nil })
        _ = app.owner.respond(to: envelope(intent("ledger", screen: "tally", version: 1), session: session))
        #expect(await eventually { navigation(app.map, session: session)?.topScreen?.kind == "ledger" })
        let id = try SessionID(session)
        let closed = try coordinatorReply(app.owner.respond(to: envelope(call("closeSession"), session: session)))
        #expect(closed.ok)
        #expect(await eventually {
            app.map.entries(in: .everything).allSatisfy { $0.key.session != id }
        })
        // An intent for it now has nothing to act on.
        let late = try intentReply(app.owner.respond(to: envelope(intent("ledger", screen: "tally"), session: session)))
        #expect(!late.applied)
    }

    /// A view model gone for longer than every try of an `appear` lasts: the owner sends the
    /// appear again while its screen is on top, so the screen gets its view model's state when it
    /// comes back (a client waits for the state of the screen's appearance).
    @Test func anAppearEveryTryOfWhichFailedIsSentAgainWhileItsScreenIsOnTop() async throws {
        let app = try TallyBus()
        app.bus.unregister("vm.tally")
        let session = try #require(try app.open().result["session"])
        #expect(await eventually { app.owner.appearsSentAgain.load(ordering: .relaxed) >= 1 })
        #expect(viewState(app.map, session: session) == nil)
        let box = UncheckedBox(app.tally!)
        app.bus.register("vm.tally") { box.value.handle($0) }
        let key = try #require(navigation(app.map, session: session)).topAppearKey
        #expect(await eventually { viewState(app.map, session: session)?.appearKey == key })
    }

    /// The owner's own screens take intents as every screen does: of two clients acting at once
    /// on the same navigation version one wins and the other is told it was stale, and a retry
    /// of an applied one, even after a restart of the owner, is answered with the version it
    /// made instead of being applied again (its navigation is recorded under `<key>/navigate`).
    @Test func theOwnersOwnIntentsAreAppliedOnceAndCheckedForStaleness() async throws {
        let app = try TallyBus()
        let session = try #require(try app.open().result["session"])
        #expect(await eventually { viewState(app.map, session: session) != nil })
        let shown = try #require(navigation(app.map, session: session)).version
        let note = envelope(intent("note", screen: "tally", version: shown), session: session, key: "k-note")
        let first = try intentReply(app.owner.respond(to: note))
        #expect(first.applied && first.screenVersion == shown + 1)
        let other = try intentReply(app.owner.respond(to: envelope(intent("note", screen: "tally", version: shown), session: session, key: "k-other")))
        #expect(!other.applied && other.error.code == .staleIntent, "\(other)")

        let close = try intentReply(app.owner.respond(to: envelope(intent("close", screen: "note", version: shown + 1), session: session, key: "k-close")))
        #expect(close.applied && close.screenVersion == shown + 2)
        app.owner.shutdown()
        app.owner = try app.startOwner(incarnation: 2)
        let retried = try intentReply(app.owner.respond(to: note))
        #expect(retried.applied && retried.screenVersion == shown + 1, "\(retried)")
        #expect(app.owner.counters.retriesAnswered == 1)
        let now = try #require(navigation(app.map, session: session))
        #expect(now.version == shown + 2 && !now.hasModal, "the note was presented again: v\(now.version)")
    }

    /// A view model that closed a session does not make its state again for an `appear` of that
    /// opening arriving after the close (a try held up on the way): it answers it as done. A
    /// person's intent on the closed session is refused, saying so; an `appear` of a new opening
    /// of the same session id opens it again.
    @Test func aLateAppearAfterACloseMakesNoStateAgain() async throws {
        let app = try TallyBus()
        let session = try #require(try app.open().result["session"])
        #expect(await eventually { viewState(app.map, session: session) != nil })
        #expect(app.ownerViewModelCalls.waitUntilIdle(timeout: .seconds(5)))
        let appear = try #require(app.bus.delivered(to: "vm.tally").last { (try? $0.unwrap(Flowbus_V1_Intent.self))?.action == "appear" })
        #expect(try appear.unwrap(Flowbus_V1_Intent.self).sessionOpenedAtUnixNanos > 0)
        #expect(try coordinatorReply(app.owner.respond(to: envelope(call("closeSession"), session: session))).ok)
        #expect(app.ownerViewModelCalls.waitUntilIdle(timeout: .seconds(5)))
        #expect(await eventually { viewState(app.map, session: session) == nil })

        let late = try intentReply(app.tally.handle(appear))
        #expect(late.applied, "answered as done, so the owner's lane moves on")
        #expect(app.tally.lateAfterClose == 1)
        try await Task.sleep(for: .milliseconds(50))
        #expect(viewState(app.map, session: session) == nil, "the closed session's state was made again")

        let add = try intentReply(app.tally.handle(envelope(intent("add", screen: "tally", fields: ["amount": "1"]), session: session)))
        #expect(!add.applied && add.error.code == .invalidField)
        #expect(add.error.message.contains("was closed"), "\(add.error.message)")

        // The same id opened again: its appear (a newer opening) runs, and so do intents after it.
        #expect(try app.open(session, create: true).ok)
        #expect(await eventually { viewState(app.map, session: session) != nil })
        let again = try intentReply(app.tally.handle(envelope(intent("add", screen: "tally", fields: ["amount": "2"]), session: session)))
        #expect(again.applied, "\(again.error)")
    }

    /// The owner follows every session's view-model states for activity, but holds none of them
    /// once started, nor its instances' records, nor the sessions' navigations and records it
    /// keeps in memory (issue 16: memory per session); closing a session still reaches every view
    /// model that published a state in it, on screen or not.
    @Test func theOwnerHoldsNoViewModelStateYetClosingReachesEveryViewModel() async throws {
        let app = try TallyBus()
        let delivered = Mutex<[String]>([])
        app.bus.register("vm.gone") { request in
            let action = (try? request.unwrap(Flowbus_V1_Intent.self))?.action ?? "?"
            delivered.withLock { $0.append(action) }
            var reply = Flowbus_V1_IntentReply()
            reply.applied = true
            return envelope(reply, session: request.session)
        }
        let session = try #require(try app.open().result["session"])
        let id = try SessionID(session)
        #expect(await eventually { viewState(app.map, session: session) != nil })
        // A view model of a screen no longer in the navigation (it was popped) published a state.
        let gone = CloneKey.viewModel(id, try ScreenName("gone"))
        app.map.inject(gone, value: Array("a state".utf8))
        #expect(app.map.value(at: gone) != nil, "the map keeps it")
        #expect(app.owner.map.value(at: gone) == nil && app.owner.map.value(at: .viewModel(id, try ScreenName("tally"))) == nil,
                "the owner's copy does not")
        #expect(app.map.value(at: .navigation(id)) != nil && app.owner.map.value(at: .navigation(id)) == nil,
                "the navigation is in its memory (encoded), not again in its map")
        #expect(app.owner.state.withLock { $0.navigations.version(of: id) } == 1)
        #expect(app.map.value(at: .sessionMeta(id)) != nil && app.owner.map.value(at: .sessionMeta(id)) == nil,
                "the session's record is in its memory, not again in its map")
        // Nor its own instance's record (read only when it restarts), which the map holds.
        let record = CloneKey.coordinatorInstance(app.owner.coordinatorName, id)
        #expect(app.map.value(at: record) != nil && app.owner.map.value(at: record) == nil)
        #expect(await eventually { app.owner.state.withLock { $0.viewModels[id] ?? 0 }.nonzeroBitCount == 2 })
        #expect(try coordinatorReply(app.owner.respond(to: envelope(call("closeSession"), session: session))).ok)
        #expect(app.ownerViewModelCalls.waitUntilIdle(timeout: .seconds(5)))
        #expect(delivered.withLock { $0 } == ["close"])
        #expect(app.owner.state.withLock { $0.viewModels[id] } == nil, "forgotten with the session")
    }

    /// The probe's stall: a client's intent was applied, its reply never came, and the retry
    /// (same key) arrived after the screen had changed. It is answered "applied", not STALE.
    @Test func aRetriedIntentIsAnsweredWithItsFirstOutcomeNotRefusedAsStale() async throws {
        let app = try TallyBus()
        let session = try #require(try app.open().result["session"])
        _ = app.owner.respond(to: envelope(intent("ledger", screen: "tally", version: 1), session: session, key: "k-ledger"))
        #expect(await eventually { navigation(app.map, session: session)?.topScreen?.kind == "ledger" })
        let version = try #require(navigation(app.map, session: session)).version
        // coord.ledger's `more`: applied through the owner; then the same intent again.
        let first = try intentReply(app.ledger.respond(to: envelope(intent("more", screen: "ledger", version: version), session: session, key: "k-more")))
        let retry = try intentReply(app.ledger.respond(to: envelope(intent("more", screen: "ledger", version: version), session: session, key: "k-more")))
        #expect(first.applied && retry == first, "retry: \(retry)")
        #expect(navigation(app.map, session: session)?.version == version + 1, "the retry pushed another screen")
        // The owner's own action (`back`), retried: popped once.
        let back = try intentReply(app.owner.respond(to: envelope(intent("back", screen: "entry", version: version + 1), session: session, key: "k-back")))
        let backAgain = try intentReply(app.owner.respond(to: envelope(intent("back", screen: "entry", version: version + 1), session: session, key: "k-back")))
        #expect(back.applied && backAgain.applied && backAgain.screenVersion == back.screenVersion)
        #expect(navigation(app.map, session: session)?.topScreen?.kind == "ledger")
        #expect(navigation(app.map, session: session)?.appliedKeys.suffix(2) == ["k-more/navigate", "k-back"])
        // A new key is a new action: made on the old version, it is stale.
        let fresh = try intentReply(app.owner.respond(to: envelope(intent("back", screen: "entry", version: version + 1), session: session, key: "k-back-2")))
        #expect(!fresh.applied && fresh.error.code == .staleIntent)
        #expect(app.owner.counters.retriesAnswered >= 1 && app.ledger.counters.retriesAnswered >= 1)
    }

    /// The keys travel with the navigation on the bus: a restarted owner (nothing in memory)
    /// still answers a retry of a change the old incarnation applied.
    @Test func aRestartedOwnerRecognisesARetryByTheNavigationsKeys() async throws {
        let app = try TallyBus()
        let session = try #require(try app.open().result["session"])
        _ = app.owner.respond(to: envelope(intent("ledger", screen: "tally", version: 1), session: session))
        #expect(await eventually { navigation(app.map, session: session)?.topScreen?.kind == "ledger" })
        let version = try #require(navigation(app.map, session: session)).version
        let back = try intentReply(app.owner.respond(to: envelope(intent("back", screen: "ledger", version: version), session: session, key: "k-1")))
        #expect(back.applied)
        app.owner.shutdown()
        let restarted = try app.startOwner(incarnation: 2)
        app.owner = restarted
        let retry = try intentReply(restarted.respond(to: envelope(intent("back", screen: "ledger", version: version), session: session, key: "k-1")))
        #expect(retry.applied && retry.screenVersion == version + 1, "\(retry)")
        #expect(navigation(app.map, session: session)?.version == version + 1)
        // A navigate call retried after the restart is recognised the same way.
        var push = call("navigate")
        push.ops = [.push(.make("entry", owner: "ledger", viewModel: false))]
        let pushed = try coordinatorReply(restarted.respond(to: envelope(push, session: session, key: "k-2", writer: "coord-ledger/0", incarnation: 1)))
        // The session moves on before the retry comes: it is answered with the version it made.
        let backAgain = try intentReply(restarted.respond(to: envelope(intent("back", screen: "entry", version: pushed.navVersion), session: session, key: "k-3")))
        #expect(backAgain.applied && backAgain.screenVersion == pushed.navVersion + 1)
        app.owner.shutdown()
        let again = try app.startOwner(incarnation: 3)
        app.owner = again
        let pushedAgain = try coordinatorReply(again.respond(to: envelope(push, session: session, key: "k-2", writer: "coord-ledger/0", incarnation: 1)))
        #expect(pushed.ok && pushedAgain.ok && pushedAgain.navVersion == pushed.navVersion, "\(pushedAgain)")
        #expect(navigation(app.map, session: session)?.version == backAgain.screenVersion)
        #expect(navigation(app.map, session: session)?.allScreens.filter { $0.kind == "entry" }.count == 0)
    }

    /// `ok` closed the modal, the session moved on, and the owner restarted: the retry of `ok` is
    /// answered as applied at the version it made, not refused because no modal is left.
    @Test func aRetriedOkAfterARestartIsAnsweredNotRefusedForTheModalItClosed() async throws {
        let app = try TallyBus()
        let session = try #require(try app.open().result["session"])
        let note = try intentReply(app.owner.respond(to: envelope(intent("note", screen: "tally", version: 1), session: session, key: "k-note")))
        #expect(note.applied && navigation(app.map, session: session)?.hasModal == true)
        let ok = try intentReply(app.owner.respond(to: envelope(intent("ok", screen: "note", version: note.screenVersion), session: session, key: "k-ok")))
        #expect(ok.applied && navigation(app.map, session: session)?.hasModal == false)
        let ledger = try intentReply(app.owner.respond(to: envelope(intent("ledger", screen: "tally", version: ok.screenVersion), session: session, key: "k-ledger")))
        #expect(ledger.applied)
        #expect(await eventually { navigation(app.map, session: session)?.topScreen?.kind == "ledger" })
        let moved = try #require(navigation(app.map, session: session)).version
        app.owner.shutdown()

        let restarted = try app.startOwner(incarnation: 2)
        app.owner = restarted
        let retry = try intentReply(restarted.respond(to: envelope(intent("ok", screen: "note", version: note.screenVersion), session: session, key: "k-ok")))
        #expect(retry.applied && retry.screenVersion == ok.screenVersion, "\(retry)")
        #expect(navigation(app.map, session: session)?.version == moved)
    }

    /// The probe opened 10,001 sessions; the owner opens none past its limit, and says what to do.
    @Test func noSessionOpensPastTheLimitUntilOneCloses() async throws {
        let app = try TallyBus(limits: SessionLimits(open: 2))
        let first = try #require(try app.open().result["session"])
        _ = try #require(try app.open().result["session"])
        let third = try app.open()
        #expect(!third.ok && third.error.code == .unavailable, "\(third)")
        #expect(third.error.message.contains("2 open sessions") && third.error.hint.contains("--max-sessions"))
        // Attaching to an open session is not opening one.
        #expect(try app.open(first).result["attached"] == "true")
        #expect(try coordinatorReply(app.owner.respond(to: envelope(call("closeSession"), session: first))).ok)
        #expect(try app.open().ok)
    }

    /// One client may not fill the host: past its own limit it is refused, saying so, while
    /// another client and the host's plugins and operators still open sessions; closing one of
    /// its sessions lets it open another.
    @Test func aClientOpensNoSessionPastItsOwnLimit() async throws {
        let app = try TallyBus(limits: SessionLimits(open: 10, perClient: 2))
        let first = try #require(try app.open(peer: "client:10.0.0.1").result["session"])
        #expect(try app.open(peer: "client:10.0.0.1").ok)
        let third = try app.open(peer: "client:10.0.0.1")
        #expect(!third.ok && third.error.code == .unavailable, "\(third)")
        #expect(third.error.message.contains("client:10.0.0.1") && third.error.message.contains("2 open sessions"))
        #expect(third.error.hint.contains("--max-sessions-per-client"))
        #expect(try app.open(peer: "client:10.0.0.2").ok)
        for _ in 0..<3 { #expect(try app.open(peer: "operator:pid 7").ok) }
        #expect(try app.open(peer: "plugin:coord-home").ok)
        // Attaching is not opening.
        #expect(try app.open(first, peer: "client:10.0.0.1").result["attached"] == "true")
        #expect(try coordinatorReply(app.owner.respond(to: envelope(call("closeSession"), session: first))).ok)
        #expect(try app.open(peer: "client:10.0.0.1").ok)
        #expect(!(try app.open(peer: "client:10.0.0.1").ok))
    }

    @Test func aNavigationActionOnAnOlderVersionIsRefused() throws {
        let app = try TallyBus()
        let session = try #require(try app.open().result["session"])
        let stale = try coordinatorReply(app.owner.respond(to: envelope(call("navigate", expected: 7), session: session)))
        #expect(!stale.ok && stale.error.code == .staleIntent && stale.navVersion == 1)
    }

    @Test func aSessionIdleForTheLimitIsClosedAndActivityOrATouchKeepsItOpen() async throws {
        let app = try TallyBus(idleLimit: .seconds(60))
        let session = try #require(try app.open().result["session"])
        let id = try SessionID(session)
        #expect(await eventually { viewState(app.map, session: session) != nil })
        // The record says the limit, so a client knows how often to touch.
        let record = try Envelope.decodeChecked(try #require(app.map.value(at: .sessionMeta(id)))).unwrap(Flowbus_V1_SessionRecord.self)
        #expect(record.idleLimitSeconds == 60)

        app.clock.advance(.seconds(45))
        #expect(try coordinatorReply(app.owner.respond(to: envelope(call("touch"), session: session))).ok)
        app.clock.advance(.seconds(45))
        #expect(app.owner.expireIdleSessions().isEmpty)

        #expect(app.owner.idleTime(of: id) == .seconds(45))
        // A person acting on a view model's screen reaches only vm.tally: its state is activity.
        _ = try app.bus.deliver(service: "vm.tally", body: try envelope(intent("add", screen: "tally", fields: ["amount": "1"]), session: session, key: "k").encoded())
        #expect(await eventually { app.owner.idleTime(of: id) == .zero })
        app.clock.advance(.seconds(45))
        #expect(app.owner.expireIdleSessions().isEmpty)

        app.clock.advance(.seconds(16))
        #expect(app.owner.expireIdleSessions() == [id])
        #expect(app.owner.counters.expired == 1)
        // The record went out once more saying why, before every key of the session went.
        let closing = app.map.writes.compactMap { entry -> Flowbus_V1_SessionRecord? in
            guard entry.key == .sessionMeta(id), !entry.isDelete else { return nil }
            return try? Envelope.decodeChecked(entry.value).unwrap(Flowbus_V1_SessionRecord.self)
        }.last
        #expect(closing?.open == false)
        #expect(closing?.closedReason == "idle for 60 s")
        #expect(await eventually { app.map.entries(in: .everything).allSatisfy { $0.key.session != id } })
        // Closed stays closed: a touch is refused and nothing expires twice.
        #expect(try coordinatorReply(app.owner.respond(to: envelope(call("touch"), session: session))).ok == false)
        app.clock.advance(.seconds(600))
        #expect(app.owner.expireIdleSessions().isEmpty)
    }

    @Test func withoutALimitNoSessionExpires() throws {
        let app = try TallyBus(idleLimit: nil)
        let session = try #require(try app.open().result["session"])
        app.clock.advance(.seconds(1_000_000))
        #expect(app.owner.expireIdleSessions().isEmpty)
        #expect(navigation(app.map, session: session) != nil)
    }
}
