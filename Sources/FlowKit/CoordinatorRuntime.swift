import Clone
import FlowProtocol
import Foundation
import Logging
import Majordomo
import MessagePath
import SwiftProtobuf
import Synchronization
import ZeroMQ

/// Runs one coordinator kind as the MDP service `coord.<name>`: one instance per session,
/// recorded at `/c/<name>/<session>` and rebuilt from those records after a restart, fed with
/// the states of the screens it watches, its effects carried out in order.
///
/// The process of the root coordinator is also the **navigation owner**: the only writer of
/// `/s/<session>/nav` and `/s/<session>/meta`, applying every coordinator's navigation.
public final class CoordinatorRuntime: @unchecked Sendable {
    struct State {
        var instances: [SessionID: Coordinator] = [:]
        var handled = HandledVersions()
        var startedAt: [SessionID: Int64] = [:]
        var navigations = NavigationTable()
        /// The owner's: a session's navigation when an older incarnation of this owner wrote it at
        /// a version above `navigations`' and it reached the map after this one restored
        /// (`navigationAhead`). Empty unless a restart left such a write on the way.
        var navigationsAhead: [SessionID: Navigation] = [:]
        var records = SessionRecords()
        /// Highest incarnation seen per writer: calls from an older one are fenced off.
        var fence: [String: UInt64] = [:]
        var fenced = 0
        var malformed = 0
        /// Requests refused for want of a capability (a closed host's rule).
        var forbidden = 0
        /// When each open session last saw activity (the owner's idle expiry).
        var lastActive: [SessionID: ContinuousClock.Instant] = [:]
        /// The view models that published a state in each open session (the owner's), as bits
        /// into `viewModelNames`: closing a session reaches them all without the owner holding
        /// their states. Kinds past the 64th are named in `moreViewModels`.
        var viewModels: [SessionID: UInt64] = [:]
        var viewModelNames: [ScreenName] = []
        var moreViewModels: [SessionID: Set<ScreenName>] = [:]
        var expired = 0
        /// The answers to the last intents and calls, by session and idempotency key: a retry
        /// whose first try was answered (the reply was lost, or the caller stopped waiting) gets
        /// that answer again instead of being applied twice or refused as stale.
        /// Replies kept encoded (`RecentOutcomes<[UInt8]>`): `Flowbus_V1_IntentReply`s and
        /// `Flowbus_V1_CoordinatorReply`s.
        var recentIntents = RecentOutcomes<[UInt8]>(capacity: 1024)
        var recentCalls = RecentOutcomes<[UInt8]>(capacity: 1024)
        /// Retries answered from those answers or from the navigation's applied keys.
        var retriesAnswered = 0
        /// openSession refused because `limits.open` sessions were open, or its client's `limits.perClient`.
        var sessionsRefused = 0
        /// Who opened each open session, when a client did (a closed broker's `MDP.peerPrefix`),
        /// and how many each such client holds open: `limits.perClient` bounds it.
        var openedBy: [SessionID: String] = [:]
        var openByClient: [String: Int] = [:]
        /// Calls each instance sent and has not had answered, oldest first (in its record too).
        var outbox: [SessionID: [Flowbus_V1_PendingCall]] = [:]
        /// The last calls each instance applied whose writes were confirmed, with their answers,
        /// oldest first (in its record too, so its next incarnation knows them:
        /// `CoordinatorInstance.applied`, `recordApplied`).
        var appliedCalls: [SessionID: [Flowbus_V1_AppliedCall]] = [:]
    }

    /// Requests a coordinator process takes at once (the broker's credit for its worker).
    static let concurrentRequests = 32

    /// How many idempotency keys a session's navigation remembers (`Navigation.appliedKeys`).
    static let rememberedNavigationKeys = 16
    /// How many applied calls an instance's record remembers (`CoordinatorInstance.applied`). A
    /// caller waits for each call's answer before its next in the session, so only its last
    /// one can come again; this many callers (children, parent, clients) may each have one.
    static let rememberedCalls = 4

    public let name: String
    let coordinatorName: CoordinatorName
    let type: Coordinator.Type
    /// `type.watchedScreens`, read once.
    let watchedScreens: [String]
    /// The bus the runtime serves on; nil for a runtime made for tests.
    let bus: PluginBus?
    let map: any StateMap
    /// Calls to other coordinators: posted in order, or (navigation from a non-owner) awaited.
    let calls: any ServiceCalls
    /// The owner's `appear`/`reset`/`close` to view models, on a line of their own.
    let viewModelCalls: (any ServiceCalls)?
    /// Whether this process is the navigation owner (the root coordinator's).
    let isOwner: Bool
    let state = Locked(State())
    let recordVersions = Atomic<UInt64>(0)
    /// Set by `shutdown`: nothing is sent again after it (`postAppear`).
    let stopped = Atomic<Bool>(false)
    /// `appear`s posted again after every try of theirs failed (`postAppear`).
    let appearsSentAgain = Atomic<Int>(0)
    /// `reset`s of the screens that left a session's navigation, held until the `appear` of the
    /// screen that came is answered (`followUp`), by session and view-model kind: each is the
    /// post's service, lane and body.
    let heldResets = Mutex<[SessionID: [String: ViewModelMessage]]>([:])
    /// `reset`s held back so far, and of them those sent before the `appear` they waited for
    /// was answered because another message to the same view model came first.
    let resetsHeld = Atomic<Int>(0)
    let resetsSentEarly = Atomic<Int>(0)
    /// How long a reset waits at most for the `appear` it is held behind: an `appear` whose view
    /// model is down is tried for 20 s, and the screens that left are reset meanwhile. Tests set
    /// it longer, to see a reset held, or shorter.
    let resetHoldLimitNanoseconds = Atomic<Int64>(250_000_000)
    let logger: Logger
    let writer: String
    let incarnation: UInt64
    /// The host's capability key (FLOWBUS_SESSION_KEY): with it, a client's call or intent needs
    /// a token for its session, the coordinators' own calls a plugin's; openSession mints the
    /// session's tokens. Nil (open mode, tests): no checks.
    let capabilities: CapabilityKey?
    let watchers = Locked<[Task<Void, Never>]>([])
    /// The owner closes a session idle for this long; nil = never.
    let idleLimit: Duration?
    /// The runtime's clock (idle expiry); tests pass their own.
    let now: @Sendable () -> ContinuousClock.Instant
    static let defaultIdleLimit = Duration.seconds(3600)
    /// How many sessions the owner keeps open, in all and per client.
    let limits: SessionLimits
    /// A bug planted on purpose (`--planted-bug ignore-fencing`), for the chaos checker's tests.
    public let plantedBug: PlantedBug?

    /// The app's coordinators by name: a screen this runtime shows takes its navigation actions
    /// from the declarations of the coordinator that owns it (Screen.owner).
    let peers: [String: Coordinator.Type]

    /// `peers`: every coordinator of the app (the owners of the screens this one may show).
    /// `navigationOwner`: this process is the root coordinator's, the only writer of every
    /// session's navigation (`/s/<session>/nav`) and record.
    public convenience init(bus: PluginBus, coordinator: Coordinator.Type, peers: [Coordinator.Type] = [], navigationOwner: Bool = false) throws {
        let name = try CoordinatorName(coordinator.name)
        let idleLimit = try Self.idleLimit(from: bus.environment.options)
        let limits = try SessionLimits(options: bus.environment.options)
        let agent = try bus.makeAgent(subtrees: Self.subtrees(name, coordinator, navigationOwner: navigationOwner).map(\.text))
        try self.init(
            coordinator: coordinator, peers: peers, navigationOwner: navigationOwner,
            writer: bus.environment.writer, incarnation: bus.environment.incarnation, map: agent,
            calls: try MajordomoCalls(bus: bus, name: name.text),
            viewModelCalls: navigationOwner ? try MajordomoCalls(bus: bus, name: "\(name)-vm") : nil,
            sessionIdleLimit: idleLimit, sessionLimits: limits, clock: { ProcessClock.continuousNow() }, logger: bus.logger,
            capabilities: bus.environment.capabilities, bus: bus, plantedBug: try PlantedBug.planted(in: bus.environment.options))
        if let plantedBug {
            logger.critical("PLANTED BUG \(plantedBug.rawValue): this coordinator accepts calls from replaced incarnations; for testing the chaos checker only")
        }
    }

    /// `--session-idle SECONDS` (the owner's plugin argument): 0 = never; default one hour.
    static func idleLimit(from options: [String: String]) throws(PluginEnvironmentError) -> Duration? {
        guard let text = options["session-idle"] else { return defaultIdleLimit }
        guard let seconds = Int(text), seconds >= 0 else {
            throw PluginEnvironmentError(
                "--session-idle takes whole seconds (0 = sessions never expire), as in `args: [\"--session-idle\", \"1800\"]`; got \"\(text)\"")
        }
        return seconds == 0 ? nil : .seconds(seconds)
    }

    /// A runtime over any state map and calls: `MemoryStateMap` and `InProcessBus` run it without
    /// processes. Call `start()`, then `respond(to:)` for each request; `shutdown()` at the end.
    /// `clock` drives idle expiry (`sessionIdleLimit`, nil = never): a session idle for the limit is
    /// closed when you call `expireIdleSessions()` (no timer runs here).
    public convenience init(
        coordinator: Coordinator.Type, peers: [Coordinator.Type] = [], navigationOwner: Bool = false,
        writer: String, incarnation: UInt64, map: any StateMap, calls: any ServiceCalls, viewModelCalls: (any ServiceCalls)?,
        sessionIdleLimit: Duration? = nil, sessionLimits: SessionLimits = SessionLimits(),
        clock: @escaping @Sendable () -> ContinuousClock.Instant = { .now }, logger: Logger,
        capabilities: CapabilityKey? = nil, plantedBug: PlantedBug? = nil
    ) throws {
        try self.init(
            coordinator: coordinator, peers: peers, navigationOwner: navigationOwner, writer: writer, incarnation: incarnation,
            map: map, calls: calls, viewModelCalls: viewModelCalls, sessionIdleLimit: sessionIdleLimit, sessionLimits: sessionLimits,
            clock: clock, logger: logger, capabilities: capabilities, bus: nil, plantedBug: plantedBug)
    }

    init(
        coordinator: Coordinator.Type, peers: [Coordinator.Type], navigationOwner: Bool, writer: String, incarnation: UInt64,
        map: any StateMap, calls: any ServiceCalls, viewModelCalls: (any ServiceCalls)?, sessionIdleLimit: Duration?,
        sessionLimits: SessionLimits, clock: @escaping @Sendable () -> ContinuousClock.Instant, logger: Logger, capabilities: CapabilityKey?,
        bus: PluginBus?, plantedBug: PlantedBug? = nil
    ) throws {
        self.capabilities = capabilities
        self.plantedBug = plantedBug
        self.limits = sessionLimits
        self.idleLimit = sessionIdleLimit
        self.now = clock
        self.coordinatorName = try CoordinatorName(coordinator.name)
        self.name = coordinator.name
        self.type = coordinator
        self.watchedScreens = coordinator.watchedScreens
        self.peers = Dictionary((peers + [coordinator]).map { ($0.name, $0) }, uniquingKeysWith: { _, last in last })
        self.bus = bus
        self.isOwner = navigationOwner
        self.writer = writer
        self.incarnation = incarnation
        self.map = map
        self.calls = calls
        self.viewModelCalls = viewModelCalls
        var logger = logger
        logger[metadataKey: "flowbus.coordinator"] = "\(name)"
        self.logger = logger
    }

    /// What the runtime follows: its own instances, the screens it watches and, for the owner,
    /// every session.
    static func subtrees(_ name: CoordinatorName, _ coordinator: Coordinator.Type, navigationOwner: Bool) throws -> [CloneSubtree] {
        var subtrees = [CloneSubtree.coordinator(name)]
        for screen in coordinator.watchedScreens { subtrees.append(.screen(try ScreenName(screen))) }
        if navigationOwner { subtrees.append(.allSessions) }
        return subtrees
    }

    /// Rebuilds the instances recorded on the bus, then serves until `stop` returns true.
    public func run(until stop: @escaping @Sendable () -> Bool) throws {
        guard let bus else {
            throw PluginEnvironmentError("this coordinator runtime was made without a bus (for tests); make it with init(bus:coordinator:) to serve")
        }
        // Up to `concurrentRequests` requests at once, on a few threads, one at a time per session
        // (a non-owner's navigation, a stalled owner hold up only their own session).
        try SessionLaneServer.serve(
            service: coordinatorName.service, bus: bus, map: map, writer: writer, credit: Self.concurrentRequests, threads: 4, logger: logger,
            until: stop,
            ready: {
                start(until: stop)
                sweepIdleSessions()
                logger.info("serving", metadata: ["flowbus.service": "\(coordinatorName.service)", "flowbus.instances": "\(state.withLock { $0.instances.count })"])
            },
            malformed: { state.withLock { $0.malformed += 1 } },
            handle: { [self] envelope, request in respond(to: envelope, peer: request.peer) })
        shutdown()
        logger.info("stopped")
    }

    /// Waits (at most 5 s) for the map's snapshot, rebuilds what it records, and starts following
    /// the screens this coordinator watches.
    public func start(until stop: @Sendable () -> Bool = { false }) {
        _ = map.waitUntilSynced(timeout: .seconds(5), until: stop)
        // The owner follows every session: every value written in one is activity (a client
        // acting on a view model's screen reaches the owner only this way). Noted where the map
        // takes the change in, with no task woken per change. It starts with the values held now
        // (the view-model states among them), so what restore reads and what follows meet; those
        // wait for restore, which makes the sessions they belong to known.
        let early = Mutex<(restored: Bool, held: [StateEntry])>((false, []))
        if isOwner {
            map.follow(.allSessions) { [self] change in
                let held = early.withLock { early in
                    if !early.restored { early.held.append(change) }
                    return !early.restored
                }
                if !held { noteActivity(change) }
            }
        }
        restore()
        if isOwner {
            let held = early.withLock { early in
                early.restored = true
                defer { early.held = [] }
                return early.held
            }
            for change in held { noteActivity(change) }
        }
        // Restored: the records of this coordinator's own instances are read only by `restore`
        // (the instances in memory are the live copy), and so are a session's values for the
        // owner: its record lives in `state.records`, its navigation in `state.navigations`, view
        // models' states reach it as changes, and a late navigation of its previous incarnation
        // is noted as it arrives (`noteActivity`). The map lets go of them, which was most of a
        // coordinator's memory per session.
        let ownRecords = CloneSubtree.coordinator(coordinatorName).text
        let sessions = CloneSubtree.allSessions.text
        let owner = isOwner
        map.keepValues { key in
            !key.hasPrefix(ownRecords) && !(owner && key.hasPrefix(sessions))
        }
        let changes = map.changes(in: .allScreens)
        let task = Task.detached { [self] in
            for await change in changes { screenUpdate(change) }
        }
        watchers.withLock { $0 = [task] }
    }

    /// The owner looks for idle sessions a quarter of the limit apart (at most 5 s): `run` does
    /// this; a runtime under test calls `expireIdleSessions()` itself instead.
    func sweepIdleSessions() {
        guard isOwner, let idleLimit else { return }
        let period = min(idleLimit / 4, .seconds(5))
        let task = Task.detached { [self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: period)
                expireIdleSessions()
            }
        }
        watchers.withLock { $0.append(task) }
    }

    /// Stops following the map and calling out; the map's agent stops too.
    public func shutdown() {
        stopped.store(true, ordering: .releasing)
        watchers.withLock { tasks in
            for task in tasks { task.cancel() }
            tasks = []
        }
        calls.stop()
        viewModelCalls?.stop()
        map.stop()
    }

    /// Calls refused because their writer's incarnation was replaced, and requests that were not
    /// a CoordinatorCall or Intent.
    public var counters: (fenced: Int, malformed: Int, expired: Int, forbidden: Int, retriesAnswered: Int) {
        state.withLock { ($0.fenced, $0.malformed, $0.expired, $0.forbidden, $0.retriesAnswered) }
    }

    // MARK: Lifecycle calls

    func start(session: SessionID, parent: String, args: [String: String]) -> Flowbus_V1_CoordinatorReply {
        state.withLock { state in
            if state.instances[session] == nil {
                let instance = type.init(session: session.text, parent: parent)
                for (key, value) in args where key != "parent" && key != "session" { instance.context[key] = value }
                state.instances[session] = instance
                state.startedAt[session] = WallClock.nowUnixNanos()
                var handled: [String: UInt64] = [:]
                for screen in watchedScreens {
                    handled[screen] = storedState(screen: screen, session: session)?.state.screenVersion ?? 0
                }
                state.handled.set(session, handled, screens: watchedScreens)
                instance.start()
                apply(instance, of: session, in: &state, syncNavigation: nil, persist: true)
                logger.debug("started", metadata: ["flowbus.session": "\(session)", "flowbus.parent": "\(parent)"])
            }
            var reply = Flowbus_V1_CoordinatorReply()
            reply.ok = true
            return reply
        }
    }

    func finish(session: SessionID) -> Flowbus_V1_CoordinatorReply {
        state.withLock { state in
            if let instance = state.instances[session] {
                release(instance, of: session, in: &state)
            }
            var reply = Flowbus_V1_CoordinatorReply()
            reply.ok = true
            return reply
        }
    }

    /// Finishes the instance's children, then the instance, and deletes its record; while calls
    /// it sent (its children's `finish` among them) wait for their answers, the record stays,
    /// marked released with only those calls, so a restart sends them again (`answered` deletes
    /// it after the last).
    func release(_ instance: Coordinator, of session: SessionID, in state: inout State) {
        for child in instance.children { instance.finishChild(child) }
        instance.finish()
        apply(instance, of: session, in: &state, syncNavigation: nil, persist: false)
        state.instances[session] = nil
        state.handled.remove(session)
        state.startedAt[session] = nil
        state.appliedCalls[session] = nil
        if let pending = state.outbox[session], !pending.isEmpty {
            recordReleased(session, pending: pending)
        } else {
            delete(.coordinatorInstance(coordinatorName, session))
        }
        logger.debug("finished", metadata: ["flowbus.session": "\(session)"])
    }

    /// The record of a flow finished with calls still unanswered: those calls, and nothing that
    /// would make a reader or a restart take the flow for live.
    func recordReleased(_ session: SessionID, pending: [Flowbus_V1_PendingCall]) {
        var record = Flowbus_V1_CoordinatorInstance()
        record.coordinator = name
        record.session = session.text
        record.incarnation = incarnation
        record.pending = pending
        record.released = true
        write(.coordinatorInstance(coordinatorName, session), record, keyVersion: nextRecordVersion())
    }

    /// Writes the instance's record `/c/<name>/<session>`.
    func record(_ instance: Coordinator, of session: SessionID, in state: State) {
        var record = Flowbus_V1_CoordinatorInstance()
        record.coordinator = name
        record.session = session.text
        record.parent = instance.parent
        record.children = instance.children
        record.incarnation = incarnation
        record.startedAtUnixNanos = state.startedAt[session] ?? 0
        record.handled = state.handled.table(of: session, screens: watchedScreens) ?? [:]
        record.context = instance.context
        record.pending = state.outbox[session] ?? []
        record.applied = state.appliedCalls[session] ?? []
        write(.coordinatorInstance(coordinatorName, session), record, keyVersion: nextRecordVersion())
    }

    /// The key_version of a record (a session's or an instance's): increasing within this
    /// incarnation, so a client takes no older copy of one for newer (Protocols §5).
    func nextRecordVersion() -> UInt64 {
        recordVersions.add(1, ordering: .relaxed).newValue
    }

    /// Publishes `message` at `key` as this writer and incarnation.
    func write(_ key: CloneKey, _ message: some SwiftProtobuf.Message, keyVersion: UInt64) {
        do {
            let bytes = try Envelope.wrapping(
                message, session: key.session?.text ?? "", writer: writer, incarnation: incarnation, keyVersion: keyVersion
            ).encoded()
            try map.set(key, value: bytes)
        } catch {
            logger.error("write failed", metadata: ["flowbus.key": "\(key)", "flowbus.error": "\(error)"])
        }
    }

    func delete(_ key: CloneKey) {
        do {
            try map.delete(key)
        } catch {
            logger.error("delete failed", metadata: ["flowbus.key": "\(key)", "flowbus.error": "\(error)"])
        }
    }

    /// The operation with this coordinator's declared actions on every screen it owns.
    func offeringActions(_ op: NavigationOp) -> NavigationOp {
        var op = op
        op.screens = op.screens.map(offeringActions)
        for index in op.tabs.indices { op.tabs[index].screens = op.tabs[index].screens.map(offeringActions) }
        return op
    }

    func offeringActions(_ screen: Screen) -> Screen {
        let owner = screen.owner.isEmpty ? name : screen.owner
        guard screen.actions.isEmpty, let declared = peers[owner]?.screenActions[screen.kind] else { return screen }
        var screen = screen
        screen.actions = declared.map { $0.wire(service: "coord.\(owner)", handler: .coordinator) }
        return screen
    }

    // MARK: Watching screens

    func screenUpdate(_ change: StateEntry) {
        guard case .screenMirror(let screenName, let session) = change.key, !change.isDelete else { return }
        let screen = screenName.text
        guard let screenIndex = watchedScreens.firstIndex(of: screen),
              let envelope = try? Envelope.decodeChecked(change.value),
              let value = try? envelope.unwrap(Flowbus_V1_ViewState.self) else { return }
        state.withLock { state in
            guard let instance = state.instances[session] else { return }
            let handled = state.handled.version(of: session, screen: screenIndex)
            guard value.screenVersion > handled else { return }
            state.handled.setVersion(value.screenVersion, of: session, screen: screenIndex, screens: watchedScreens)
            // Act first, record after: a crash in between acts again, and every action is idempotent.
            let (context, children) = (instance.context, instance.children)
            instance.screenChanged(ScreenChange(screen: screen, state: value.viewModelState, payload: value.shownPayload, screenID: value.screenID))
            // A state the instance let pass (no effect, nothing of its record changed: most are,
            // a `loading` or a screen shown again) is not recorded: a restart that handles it
            // again lets it pass again. Only the handled version would have changed, and the
            // next record carries it. A coordinator watching a screen wrote its record for every
            // state the screen published.
            let acted = changesRecord(instance, context: context, children: children, countingNavigation: true)
            apply(instance, of: session, in: &state, syncNavigation: nil, persist: acted)
        }
    }

    func storedState(screen: String, session: SessionID) -> (state: Flowbus_V1_ViewState, envelope: Envelope)? {
        guard let name = try? ScreenName(screen), let bytes = map.value(at: .screenMirror(name, session)),
              let envelope = try? Envelope.decodeChecked(bytes),
              let value = try? envelope.unwrap(Flowbus_V1_ViewState.self) else { return nil }
        return (value, envelope)
    }
}
