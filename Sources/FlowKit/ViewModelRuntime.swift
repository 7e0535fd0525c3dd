import Clone
import FlowProtocol
import Foundation
import Logging
import Majordomo
import MessagePath
import ZeroMQ
import SwiftProtobuf
import Synchronization

/// Serves one view-model kind as the MDP service `vm.<screen>`: one `ViewModel` instance per
/// session, restored from the Clone map when this process has not seen the session (a restart,
/// another replica), every state change published under `/s/<session>/vm/<screen>` and
/// `/v/<screen>/<session>`, intents applied once per idempotency key, stale ones refused.
///
/// Several sessions' intents are handled at once, on a few threads (`run`), one at a time per
/// session: the view models the factory makes, and the services they capture, are used from
/// those threads, so the services must be safe to share (`PluginBus.makeServiceTransport` is).
public final class ViewModelRuntime: @unchecked Sendable {
    public typealias Factory = (_ session: String) -> ViewModel

    struct Instance {
        var viewModel: ViewModel
        var version: UInt64
        /// Idempotency keys applied recently, with the version their reply carried.
        var applied = AppliedKeys()
        /// The key of the action a restart interrupted: its retry runs although the screen
        /// moved on meanwhile (the interruption's error is what moved it).
        var interrupted: String?
        /// The key of the last `appear` run for the screen shown, written with every state
        /// (`ViewState.appear_key`) so a restarted navigation owner knows which one arrived.
        var appearKey = ""
        /// The version that `appear` was answered with (`ViewState.appear_version`).
        var appearVersion: UInt64 = 0
    }

    public let screen: String
    let screenName: ScreenName
    /// The bus the runtime serves on; nil for a runtime made for tests.
    let bus: PluginBus?
    let map: any StateMap
    let writer: String
    let incarnation: UInt64
    let make: Factory
    let logger: Logger
    /// The sessions' view models. Each session's entry is read and written by one thread at a
    /// time (its requests are handled in order); the table itself is shared.
    let instances = InstanceTable()
    /// The newest incarnation seen of each process that sent lifecycle actions: one from an older
    /// incarnation (held up on the way while its process was replaced) is fenced off.
    let fences = Locked<[String: UInt64]>([:])
    /// The sessions this process closed lately, and which opening of each (`ClosedSession`).
    let closed = Locked(RecentValues<SessionID, ClosedSession>(capacity: ViewModelRuntime.rememberedClosedSessions))
    /// How many closed sessions are remembered: lifecycle calls held up on the way for longer
    /// than the last this many closes took are no longer told from a new opening's.
    static let rememberedClosedSessions = 1024
    let servedCount = Atomic<Int>(0)
    let refusedCount = Atomic<Int>(0)
    private let malformedCount = Atomic<Int>(0)
    private let forbiddenCount = Atomic<Int>(0)
    let lateAfterCloseCount = Atomic<Int>(0)
    public var served: Int { servedCount.load(ordering: .relaxed) }
    public var refused: Int { refusedCount.load(ordering: .relaxed) }
    public var malformed: Int { malformedCount.load(ordering: .relaxed) }
    /// Requests refused for want of a capability (a closed host's rule; included in `refused`).
    public var forbidden: Int { forbiddenCount.load(ordering: .relaxed) }
    /// `appear`s and `reset`s of a session that arrived after this process closed it (a try
    /// held up on the way): answered as done, nothing made again.
    public var lateAfterClose: Int { lateAfterCloseCount.load(ordering: .relaxed) }
    /// What the intent being handled on this thread stands for: the key and the screen its state
    /// changes carry (none outside an intent).
    struct Acting {
        var key = ""
        var screenID = ""
    }
    @TaskLocal static var acting = Acting()
    var currentKey: String { Self.acting.key }
    var currentScreenID: String { Self.acting.screenID }
    /// Requests handled at once: the broker's credit for this worker (Flowbus's 7/MDP extension).
    static let concurrentRequests = 32
    /// The host's capability key (FLOWBUS_SESSION_KEY): with it, an intent needs a token granting
    /// `drive` on its session, and `appear`/`reset`/`close` one of the host's plugins'. Nil: no check.
    public var capabilities: CapabilityKey?
    /// A bug planted on purpose (`--planted-bug skip-idempotency`), for the chaos checker's tests.
    public var plantedBug: PlantedBug?
    static let rememberedKeys = 64
    /// The view-model lifecycle actions only the navigation owner sends.
    static let lifecycleActions: Set<String> = ["appear", "reset", "close"]

    /// The app's payload schemas (a serialized FileDescriptorSet), published at
    /// `/schema/<package>` so that any client can read this view model's payloads.
    let schema: AppSchema?

    public convenience init(bus: PluginBus, screen: String, schema: AppSchema? = nil, make: @escaping Factory) throws {
        let name = try ScreenName(screen)
        let agent = try bus.makeAgent(subtrees: [CloneSubtree.screen(name).text] + (schema == nil ? [] : [CloneSubtree.schemas.text]))
        try self.init(
            screen: screen, schema: schema, writer: bus.environment.writer, incarnation: bus.environment.incarnation,
            map: agent, logger: bus.logger, bus: bus, make: make)
        plantedBug = try PlantedBug.planted(in: bus.environment.options)
        if let plantedBug {
            logger.critical("PLANTED BUG \(plantedBug.rawValue): this view model applies duplicated and retried intents again; for testing the chaos checker only")
        }
    }

    /// A runtime over any state map: `MemoryStateMap` runs it without processes. Call `start()`,
    /// then `handle(_:)` for each request.
    public convenience init(
        screen: String, schema: AppSchema? = nil, writer: String, incarnation: UInt64, map: any StateMap, logger: Logger,
        make: @escaping Factory
    ) throws {
        try self.init(screen: screen, schema: schema, writer: writer, incarnation: incarnation, map: map, logger: logger, bus: nil, make: make)
    }

    init(
        screen: String, schema: AppSchema?, writer: String, incarnation: UInt64, map: any StateMap, logger: Logger, bus: PluginBus?,
        make: @escaping Factory
    ) throws {
        self.screenName = try ScreenName(screen)
        self.screen = screen
        self.bus = bus
        self.map = map
        self.writer = writer
        self.incarnation = incarnation
        self.make = make
        self.schema = schema
        self.capabilities = bus?.environment.capabilities
        var logger = logger
        logger[metadataKey: "flowbus.screen"] = "\(screen)"
        self.logger = logger
    }

    /// Serves until `stop` returns true: up to `concurrentRequests` requests at once (the
    /// broker's credit for this worker), handled on `PluginEnvironment.lanes` threads (at least
    /// 4), one at a time per session. A session whose request waits on a service holds up no
    /// other session, and one session's requests, retries included, are applied in order.
    public func run(until stop: () -> Bool) throws {
        guard let bus else {
            throw PluginEnvironmentError("this view-model runtime was made without a bus (for tests); make it with init(bus:screen:) to serve")
        }
        let threads = max(4, bus.environment.lanes)
        try SessionLaneServer.serve(
            service: "vm.\(screen)", bus: bus, map: map, writer: writer, credit: Self.concurrentRequests, threads: threads, logger: logger,
            until: stop,
            ready: {
                let synced = start(until: stop)
                logger.info("serving", metadata: ["flowbus.service": "vm.\(screen)", "flowbus.synced": "\(synced)", "flowbus.threads": "\(threads)"])
            },
            malformed: { malformedCount.add(1, ordering: .relaxed) },
            handle: { [self] envelope, _ in handle(envelope) })
        map.stop()
        logger.info("stopped", metadata: ["flowbus.served": "\(served)", "flowbus.refused": "\(refused)", "flowbus.malformed": "\(malformed)"])
    }

    /// Waits (at most 5 s) for the map's snapshot, turns the loads a previous incarnation left
    /// unfinished into errors, and publishes the app's schema. Returns whether the map synced.
    @discardableResult
    public func start(until stop: () -> Bool = { false }) -> Bool {
        let synced = map.waitUntilSynced(timeout: .seconds(5), until: stop)
        // The copies first: a load finished below writes both copies anew, and must not be
        // followed by its mirror's older value, written again.
        republishSessionCopies()
        finishInterruptedLoads()
        if let schema { publish(schema) }
        return synced
    }

    /// Intents refused (stale, invalid, refused by the view model) and requests that were not an Intent.
    public var counters: (served: Int, refused: Int, malformed: Int) { (served, refused, malformed) }

    /// Handles one request envelope (an Intent) and returns the reply envelope.
    public func handle(_ envelope: Envelope) -> Envelope {
        guard envelope.holds(Flowbus_V1_Intent.self), let intent = try? envelope.unwrap(Flowbus_V1_Intent.self) else {
            malformedCount.add(1, ordering: .relaxed)
            return EnvelopeService.wrongKind(envelope, expected: [Flowbus_V1_Intent.protoMessageName], writer: writer)
        }
        guard let session = try? SessionID(envelope.session) else {
            refusedCount.add(1, ordering: .relaxed)
            return reply(to: envelope, applied: false, version: 0, error: WireError(
                .invalidField, "the intent names no valid session (\"\(envelope.session)\")",
                hint: "set Envelope.session to the session id `flowbus sessions` lists"))
        }
        let needed: SessionRight = Self.lifecycleActions.contains(intent.action) ? .plugin : .drive
        if let error = SessionGuard.refusal(envelope, needs: needed, session: session, key: capabilities, doing: "the intent \"\(intent.action)\"") {
            refusedCount.add(1, ordering: .relaxed)
            SessionGuard.log(error, count: forbiddenCount.add(1, ordering: .relaxed).newValue, session: session, envelope: envelope, logger: logger)
            return reply(to: envelope, applied: false, version: 0, error: error)
        }
        if let fenced = fence(envelope) { return fenced }
        if intent.action == "close" { return close(session, opening: intent.sessionOpenedAtUnixNanos, answering: envelope) }
        if let answer = answerForClosed(intent, session: session, envelope: envelope) { return answer }
        let instance = instance(for: session, atLeast: intent.screenVersion)
        let key = plantedBug == .skipIdempotency ? "" : envelope.idempotencyKey
        if !key.isEmpty, let version = instance.applied[key] {
            return reply(to: envelope, applied: true, version: version, error: nil)
        }
        // The retry of an action a restart interrupted runs again, though the state on the bus
        // may still carry its key (the loading state it left, written again from the mirror).
        let resumes = !key.isEmpty && key == instance.interrupted
        if !key.isEmpty, !resumes, key == lastKey(session: session) {
            return reply(to: envelope, applied: true, version: instance.version, error: nil)
        }
        let isSystem = intent.action == "appear" || intent.action == "reset"
        if !isSystem, !resumes, plantedBug != .skipIdempotency, intent.screenVersion != 0, intent.screenVersion < instance.version {
            refusedCount.add(1, ordering: .relaxed)
            return reply(to: envelope, applied: false, version: instance.version, error: WireError(
                .staleIntent,
                "the \(screen) screen changed since this action was made (it was at version \(intent.screenVersion), it is now at \(instance.version)); the action was not applied",
                hint: "look at the screen again and repeat the action if you still want it"))
        }
        return Self.$acting.withValue(Acting(key: key, screenID: intent.screenID)) {
            apply(intent, of: envelope, to: instance, session: session, key: key, resumes: resumes, isSystem: isSystem)
        }
    }

    /// The rest of `handle`, for an intent that is to run: with its key and screen bound (`acting`).
    private func apply(
        _ intent: Flowbus_V1_Intent, of envelope: Envelope, to instance: Instance, session: SessionID, key: String, resumes: Bool, isSystem: Bool
    ) -> Envelope {
        var instance = instance
        if intent.action == "appear" || intent.action == "reset" {
            instance.appearKey = intent.action == "appear" ? key : ""
            instance.appearVersion = 0
        }
        instances[session] = instance
        let input = IntentInput(
            action: intent.action, fields: intent.fields, params: intent.params, session: session.text, screenID: intent.screenID, screen: intent.screen)
        if !intent.params.isEmpty || intent.action == "appear" { instance.viewModel.screenParams = intent.params }
        // A state on the bus that belongs to no screen or another one (after a reset, or another
        // screen of the kind) is published again for the screen that appeared.
        if intent.action == "appear", stored(session: session)?.state.screenID != intent.screenID {
            instance.viewModel.hasPublished = false
        }
        if intent.action == "reset" {
            // Back to `none` (published, so clients and coordinators see it), then a fresh view model.
            instance.viewModel.state = .none
            let fresh = make(session.text)
            fresh.restore(state: .none, data: nil)
            fresh.hasPublished = true
            attach(fresh, session: session)
            instances[session]?.viewModel = fresh
        } else {
            do {
                // Its service calls are keyed from the action's key: run again, it makes the same calls.
                try ServiceCallKeys.during(action: ServiceCallKeys.base(service: "vm.\(screen)", session: session.text, key: key), session: session.text) {
                    () throws(IntentRefusal) in try instance.viewModel.handle(input)
                }
            } catch {
                refusedCount.add(1, ordering: .relaxed)
                return reply(to: envelope, applied: false, version: instances[session]?.version ?? 0, error: WireError(error.code, error.message, hint: error.hint))
            }
        }
        servedCount.add(1, ordering: .relaxed)
        var updated = instances[session] ?? instance
        if intent.action == "appear", updated.version == instance.version, !key.isEmpty {
            recordAppear(key, session: session)
        }
        if intent.action == "appear" { updated.appearVersion = updated.appearKey.isEmpty ? 0 : updated.version }
        // Once the person acted again (or the retry ran), a late retry is stale as any other.
        if !isSystem { updated.interrupted = nil }
        if !key.isEmpty {
            updated.applied.record(key, version: updated.version, keeping: Self.rememberedKeys)
        }
        instances[session] = updated
        return reply(to: envelope, applied: true, version: updated.version, error: nil)
    }

    func reply(to request: Envelope, applied: Bool, version: UInt64, error: WireError?) -> Envelope {
        var reply = Flowbus_V1_IntentReply()
        reply.applied = applied
        reply.screenVersion = version
        if let error { reply.error = error }
        return EnvelopeService.envelope(reply, answering: request, writer: writer, incarnation: incarnation)
    }

    // MARK: Instances

    /// The session's view model: the one in memory, else one restored from the Clone map. When
    /// the intent was made on a newer version than this process knows (another replica wrote
    /// it), waits briefly for the map to catch up.
    func instance(for session: SessionID, atLeast version: UInt64) -> Instance {
        if var known = instances[session] {
            if version > known.version, let newer = waitForStored(session: session, version: version) {
                known.viewModel.restore(state: newer.viewModelState, data: newer.data)
                known.version = newer.state.screenVersion
                known.appearKey = newer.state.appearKey
                known.appearVersion = newer.state.appearVersion
                instances[session] = known
            }
            return known
        }
        let viewModel = make(session.text)
        var stored = stored(session: session)
        if version > (stored?.state.screenVersion ?? 0) {
            stored = waitForStored(session: session, version: version) ?? stored
        }
        viewModel.restore(state: stored?.viewModelState ?? .none, data: stored?.data)
        viewModel.hasPublished = stored != nil
        attach(viewModel, session: session)
        var instance = Instance(
            viewModel: viewModel, version: stored?.state.screenVersion ?? 0, appearKey: stored?.state.appearKey ?? "",
            appearVersion: stored?.state.appearVersion ?? 0)
        // The `appear` the state names ran here before (a restart, another replica): sent again,
        // it is answered as it was the first time.
        if !instance.appearKey.isEmpty, instance.appearVersion > 0 {
            instance.applied.record(instance.appearKey, version: instance.appearVersion, keeping: Self.rememberedKeys)
        }
        if let key = stored?.idempotencyKey, !key.isEmpty {
            instance.applied.record(key, version: instance.version, keeping: Self.rememberedKeys)
        }
        instances[session] = instance
        return instance
    }

    func attach(_ viewModel: ViewModel, session: SessionID) {
        viewModel.onChange = { [unowned self] state, data in
            self.publish(session: session, state: state, data: data)
        }
    }

    /// The key of the action that wrote the session's state last. Read from the envelope alone:
    /// the state inside (the screen's data and presentation, kilobytes) is not decoded for it on
    /// every intent.
    func lastKey(session: SessionID) -> String? {
        guard let bytes = map.value(at: .screenMirror(screenName, session)),
              let envelope = try? Envelope.decodeChecked(bytes), envelope.holds(Flowbus_V1_ViewState.self) else { return nil }
        return envelope.idempotencyKey
    }

    struct Stored {
        var state: Flowbus_V1_ViewState
        var data: ScreenPayload?
        var idempotencyKey: String
        var writer: String

        var viewModelState: ViewModelState {
            switch state.phase {
            case .success: .success(data ?? ScreenPayload())
            case .error: .error(state.message)
            // A restart in the middle of a load: nothing is loading any more.
            case .loading, .none, .UNRECOGNIZED: .none
            }
        }
    }

    func stored(session: SessionID) -> Stored? {
        guard let bytes = map.value(at: .screenMirror(screenName, session)),
              let envelope = try? Envelope.decodeChecked(bytes),
              let state = try? envelope.unwrap(Flowbus_V1_ViewState.self) else { return nil }
        let data = state.shownPayload
        return Stored(state: state, data: data, idempotencyKey: envelope.idempotencyKey, writer: envelope.writer)
    }

    /// The session's state once the map holds `version` or newer (written by another replica),
    /// looked at again as the key changes; nil after half a second.
    func waitForStored(session: SessionID, version: UInt64) -> Stored? {
        var found: Stored?
        _ = map.wait(forChangesOf: .screenMirror(screenName, session), timeout: .milliseconds(500)) {
            found = stored(session: session).flatMap { $0.state.screenVersion >= version ? $0 : nil }
            return found != nil
        }
        return found
    }

    /// States this plugin left in `loading` when it stopped: nothing will finish them, so they
    /// become an error a person can act on.
    func finishInterruptedLoads() {
        for entry in map.entries(in: .screen(screenName)) {
            guard let session = entry.key.session, let stored = stored(session: session), stored.state.phase == .loading,
                  stored.writer == writer else { continue }
            // The error belongs to the screen the interrupted load was for.
            Self.$acting.withValue(Acting(screenID: stored.state.screenID)) {
                instance(for: session, atLeast: 0).viewModel.state = .error(
                    "The previous action was interrupted by a restart of the \(screen) worker. Please try again.")
            }
            // The interrupted action did not finish: its client's retry (same key) runs it again,
            // rather than being told it was applied. Its service calls keep their keys
            // (`ServiceCallKeys`), so what they did already is answered, not done twice.
            if !stored.idempotencyKey.isEmpty, var instance = instances[session] {
                instance.applied.forget(stored.idempotencyKey)
                instance.interrupted = stored.idempotencyKey
                instances[session] = instance
            }
            logger.notice("finished a load interrupted by a restart", metadata: ["flowbus.session": "\(session)"])
        }
    }

    /// Writes again the session copy (`/s/<id>/vm/<screen>`) of every state this replica wrote
    /// last. A state is written twice, its mirror first; a process killed between the two writes,
    /// or while the session copy was being sent again after a loss, left clients without the state
    /// its mirror holds — and its retried action answered "applied" from the mirror. The mirror is
    /// what this runtime restores from, so it is the copy to trust.
    func republishSessionCopies() {
        var written = 0
        for entry in map.entries(in: .screen(screenName)) {
            guard let session = entry.key.session, let envelope = try? Envelope.decodeChecked(entry.value),
                  envelope.writer == writer else { continue }
            do {
                try map.set(.viewModel(session, screenName), value: entry.value)
                written += 1
            } catch {
                logger.error("a session's state was not written again", metadata: ["flowbus.session": "\(session)", "flowbus.error": "\(error)"])
            }
        }
        if written > 0 { logger.info("wrote again the session copies of this replica's states", metadata: ["flowbus.count": "\(written)"]) }
    }

    // MARK: Publishing

    /// Writes the app's schema at `/schema/<package>` unless the map already holds it.
    func publish(_ schema: AppSchema) {
        let key = schema.cloneKey
        do {
            if let current = map.value(at: key), let envelope = try? Envelope.decodeChecked(current),
               let published = try? envelope.unwrap(Google_Protobuf_FileDescriptorSet.self), published == schema.set { return }
            let bytes = try Envelope.wrapping(schema.set, writer: writer, incarnation: incarnation).encoded()
            try map.set(key, value: bytes)
        } catch {
            logger.error("schema not published", metadata: ["flowbus.key": "\(key)", "flowbus.error": "\(error)"])
        }
    }

    func publish(session: SessionID, state: ViewModelState, data: ScreenPayload?) {
        var instance = instances[session]
        let version = (instance?.version ?? stored(session: session)?.state.screenVersion ?? 0) + 1
        instance?.version = version
        // A state the `appear` itself writes carries its version: the last one is its answer.
        if let key = instance?.appearKey, !key.isEmpty, key == currentKey { instance?.appearVersion = version }
        if let instance { instances[session] = instance }
        var value = Flowbus_V1_ViewState(state: state, shown: data)
        value.screenVersion = version
        value.screenID = currentScreenID
        value.appearKey = instance?.appearKey ?? ""
        value.appearVersion = instance?.appearVersion ?? 0
        if let viewModel = instance?.viewModel {
            value.presentation = viewModel.presentation()
            value.actions = viewModel.offeredActions()
            value.errorField = viewModel.errorField
        }
        do {
            let bytes = try Envelope.wrapping(
                value, session: session.text, idempotencyKey: currentKey, writer: writer,
                incarnation: incarnation, keyVersion: version
            ).encoded()
            try map.set(CloneKey.viewModelKeys(session: session, screen: screenName), value: bytes)
        } catch {
            logger.error("state not published", metadata: ["flowbus.session": "\(session)", "flowbus.error": "\(error)"])
        }
    }
}

/// The view models of a runtime's sessions, shared by its threads.
final class InstanceTable: @unchecked Sendable {
    private let lock = NSLock()
    private var instances: [SessionID: ViewModelRuntime.Instance] = [:]

    subscript(session: SessionID) -> ViewModelRuntime.Instance? {
        get { lock.withLock { instances[session] } }
        set { lock.withLock { instances[session] = newValue } }
    }

    var count: Int { lock.withLock { instances.count } }
}
