import Clone
import FlowProtocol
import Foundation
import Logging
import Majordomo
import MessagePath
import Synchronization
import ZeroMQ

/// How a session client connects, waits and retries.
public struct SessionClientOptions: Sendable {
    /// Appears in `Envelope.writer` of every intent, so `flowbus trace` can tell clients apart.
    public var name = "client/\(getpid())"
    /// The first try of a request; each later one waits twice as long, up to `requestTimeoutCap`
    /// (the broker answers UNKNOWN_SERVICE after 5 s, so the later tries outlast that). A lost
    /// request costs the short first wait; a plugin stalled or restarting is waited for.
    public var requestTimeout: Duration = .seconds(1)
    public var requestTimeoutCap: Duration = .seconds(6)
    /// Tries per request (each on a new socket, with the same idempotency key, so a retry of an
    /// intent that was applied is answered with its first outcome, never applied twice):
    /// 1+2+4+6+6+6+6 = 31 s; at 30 % of requests lost, all seven are lost once in 4,500.
    public var requestTries = 7
    /// How long opening waits for the Clone snapshot of the session.
    public var syncTimeout: Duration = .seconds(5)
    /// The Clone agent's server timeout (no HUGZ or update for this long: resync when back).
    public var cloneServerTimeout: Duration = .seconds(3)
    /// Follow the session's live coordinator instances (`/c/`) from the start.
    public var followCoordinators = false
    /// Events kept in the log (the oldest go first).
    public var maxEvents = 10_000
    /// A driver (a client that opened or announced itself) tells coord.app it is still there
    /// (`touch`) three times per idle limit the session record states, so a person reading a
    /// screen does not lose the session to idle expiry. Observers never do.
    public var keepAlive = true

    public init() {}
}

/// The one way a client talks to the bus about one session: opens or attaches to it, follows
/// `/s/<id>/` through a Clone agent into a `SessionView`, and sends intents to the right service.
///
/// Safe to use from any task: requests go through one `BusRequester` thread (MajordomoClient is
/// not thread-safe), the view is behind a lock, and `views()` streams every change.
public final class SessionClient: Sendable {
    public let sessionID: SessionID
    /// The session's id as text.
    public var session: String { sessionID.text }
    public let endpoints: BusEndpoints
    public let options: SessionClientOptions
    /// The capability this client presents on a closed host (`drive` when it opened or attached,
    /// `watch` when it only observes); nil on an open host.
    public let capability: String?
    /// The session's watch capability, when openSession gave one: what to hand an observer.
    public let watchCapability: String?
    let requester: BusRequester
    /// The client's own Clone agent, or nil when a `SharedSessionFeed` feeds it.
    let agent: CloneAgent?
    let shared: SharedSessionFeed?
    let store: SessionStore
    let logger: Logger
    /// The client's agent handing the session's changes to `store`, on its thread.
    private let following: Mutex<CloneObservation?>
    /// False on a shared request pool, which outlives this client.
    private let ownsRequester: Bool
    private let coordinatorsFollowed = Mutex<CloneObservation?>(nil)
    private let keepingAlive = Mutex<Task<Void, Never>?>(nil)
    private let counter = Atomic<Int>(0)
    /// How many views `prepareWhenOffered` looked at for an action (tests: it looks in each view
    /// as it comes, not on a timer).
    let offerLooks = Atomic<Int>(0)
    private let keyPrefix = String(UUID().uuidString.prefix(8)).lowercased()

    /// Opens a new session (`coord.app` openSession) and follows it.
    public static func open(
        _ endpoints: BusEndpoints, options: SessionClientOptions = .init(), logger: Logger = Logger(label: "flowbus.client")
    ) async throws(SessionClientError) -> SessionClient {
        let connection = try BusConnection(endpoints: endpoints, options: options, logger: logger)
        do {
            let grant = try await connection.openSession(requested: nil)
            let client = try await SessionClient(grant: grant, capability: grant.drive, connection: connection)
            if options.keepAlive { client.keepAlive() }
            return client
        } catch {
            connection.requester.stop()
            throw error
        }
    }

    /// Attaches to an existing session. With `announce` (a driver) coord.app is asked to attach
    /// (openSession with the id), which also resumes a session it lost; without (an observer)
    /// nothing is sent, the session is only followed. On a closed host `capability` is the token
    /// the session's opener got (drive to act, watch to observe); without one, a client that can
    /// read the host's key (its own user's tools) makes its own.
    public static func attach(
        _ session: String, capability: String? = nil, endpoints: BusEndpoints, announce: Bool = true,
        options: SessionClientOptions = .init(), create: Bool = false, logger: Logger = Logger(label: "flowbus.client")
    ) async throws(SessionClientError) -> SessionClient {
        let connection = try BusConnection(endpoints: endpoints, options: options, logger: logger)
        let token = capability ?? endpoints.capabilities?.token(announce ? .drive : .watch, session: session)
        do {
            let grant = announce
                ? try await connection.openSession(requested: session, capability: token, create: create)
                : SessionGrant(session: session, drive: nil, watch: token)
            let client = try await SessionClient(grant: grant, capability: announce ? grant.drive : token, connection: connection)
            if announce && options.keepAlive { client.keepAlive() }
            return client
        } catch {
            connection.requester.stop()
            throw error
        }
    }

    /// Opens a new session on a shared request pool and Clone feed (the simulator's way: many
    /// sessions, one process). `stop()` leaves both running for the other sessions. Without a
    /// feed the session has a Clone agent of its own (a client of a closed host, which reads one
    /// session per connection: a simulator's agent on another machine).
    public static func open(
        on connection: BusConnection, feed: SharedSessionFeed?, options: SessionClientOptions? = nil
    ) async throws(SessionClientError) -> SessionClient {
        let grant = try await connection.openSession(requested: nil)
        let client = try await SessionClient(
            grant: grant, capability: grant.drive, connection: connection, feed: feed, options: options, ownsRequester: false)
        if client.options.keepAlive { client.keepAlive() }
        return client
    }

    private convenience init(grant: SessionGrant, capability: String?, connection: BusConnection) async throws(SessionClientError) {
        try await self.init(grant: grant, capability: capability, connection: connection, feed: nil, options: nil, ownsRequester: true)
    }

    private init(
        grant: SessionGrant, capability: String?, connection: BusConnection, feed: SharedSessionFeed?, options: SessionClientOptions?,
        ownsRequester: Bool
    ) async throws(SessionClientError) {
        let session = grant.session
        do {
            sessionID = try SessionID(session)
        } catch {
            throw .invalidSession(session, reason: "\(error)")
        }
        self.capability = capability
        watchCapability = grant.watch
        endpoints = connection.endpoints
        let options = options ?? connection.options
        self.options = options
        requester = connection.requester
        logger = connection.logger
        store = SessionStore(session: sessionID, maxEvents: options.maxEvents)
        self.ownsRequester = ownsRequester
        shared = feed
        if let feed {
            agent = nil
            following = Mutex(nil)
            feed.register(store)
            if options.followCoordinators { store.state.withLock { $0.view.followsCoordinators = true } }
            return
        }
        // The apps' schemas come with the session, so scripts can read app payloads by path.
        var configuration = CloneAgentConfiguration(subtrees: [CloneSubtree.session(sessionID).text, CloneSubtree.schemas.text])
        configuration.serverTimeout = options.cloneServerTimeout
        configuration.capability = capability
        let agent: CloneAgent
        do {
            configuration.curve = try endpoints.curve()
            agent = try CloneAgent(context: connection.context, endpoints: endpoints.clone, configuration: configuration, logger: logger)
        } catch let error as SessionClientError {
            throw error
        } catch {
            throw .cannotConnect(endpoint: endpoints.clone.snapshot, reason: "\(error)")
        }
        self.agent = agent
        // The session and the schemas, in the agent's order (`/c/` is followed on its own),
        // applied on the agent's thread as they come: a view reaches a waiting task with one
        // wake-up, not two.
        following = Mutex(agent.observe(prefix: "") { [store] update in
            if !CloneSubtree.allCoordinators.contains(update.key) { store.apply(update) }
        })
        guard await agent.waitUntilSynced(timeout: options.syncTimeout) else {
            stop()
            throw .noSnapshot(endpoint: endpoints.clone.snapshot, timeout: options.syncTimeout)
        }
        if let refusal = agent.refusal {
            stop()
            throw .readRefused(session: session, reason: refusal.reason)
        }
        if options.followCoordinators { try await followCoordinators() }
    }

    // MARK: Reading

    /// The session as of now.
    public var view: SessionView { store.view }

    /// Whether the Clone agent holds a current snapshot (false while it resyncs after a silence).
    public var isSynced: Bool { agent?.isSynced ?? shared?.isSynced ?? false }

    /// What this client's Clone agent counted: gaps in the session's chain, snapshots taken again…
    /// (with a shared feed, what its agent counted for every session).
    public var agentStatistics: CloneAgentStatistics { agent?.statistics ?? shared?.statistics ?? CloneAgentStatistics() }

    /// The ordered log of what this client saw and sent (the last `count`, or all kept).
    public func events(last count: Int? = nil) -> [SessionEvent] { store.events(last: count) }

    /// The current view, then every change; ends when the client stops.
    public func views() -> AsyncStream<SessionView> { store.views() }

    /// The current view and every later one for which `include` holds. `include` runs as each
    /// view is applied, on the thread that applies it, so the task reading the stream wakes only
    /// for the views it wants, not for every update of the session; keep it quick, and do not
    /// wait in it.
    public func views(where include: @escaping @Sendable (SessionView) -> Bool) -> AsyncStream<SessionView> {
        store.views(where: include)
    }

    /// Calls `look` with the current view and every later one as the client applies it (on the
    /// Clone agent's thread), until `look` returns true or the returned function is called;
    /// `ended` runs if the client stops first. For a caller that wants to note the moment views
    /// come (a benchmark's milestones) without a task woken for each: keep `look` quick, and do
    /// not wait in it.
    public func watch(
        _ look: @escaping @Sendable (SessionView) -> Bool, ended: @escaping @Sendable () -> Void = {}
    ) -> @Sendable () -> Void {
        store.watch(look, ended: ended)
    }

    /// Also follows the session's live coordinator instances (`/c/<name>/<session>`) into
    /// `SessionView.coordinators`; returns once they are in the view.
    public func followCoordinators() async throws(SessionClientError) {
        // A shared feed follows every coordinator instance already.
        guard let agent else {
            store.state.withLock { $0.view.followsCoordinators = true }
            return
        }
        let start = coordinatorsFollowed.withLock { task -> Bool in
            guard task == nil else { return false }
            task = agent.observe(prefix: CloneSubtree.allCoordinators.text) { [store] update in store.apply(update) }
            return true
        }
        guard start else { return }
        do { try agent.subscribe(CloneSubtree.allCoordinators.text) } catch { throw .cannotConnect(endpoint: endpoints.clone.snapshot, reason: "\(error)") }
        guard await agent.waitUntilSynced(timeout: options.syncTimeout) else {
            throw .noSnapshot(endpoint: endpoints.clone.snapshot, timeout: options.syncTimeout)
        }
        store.state.withLock { $0.view.followsCoordinators = true }
    }

    /// Waits until `predicate` holds for the view, or `timeout` passes; throws `SessionWaitTimeout`
    /// (with the view as it was and the last events) when it does not. `predicate` runs where each
    /// view is applied (the Clone agent's thread), so keep it quick and do not wait in it; for one
    /// that touches the caller's own state, `waitUntilInTask`.
    @discardableResult
    public func waitUntil(
        timeout: Duration = .seconds(5), _ expected: String = "the condition",
        _ predicate: @escaping @Sendable (SessionView) -> Bool
    ) async throws(SessionWaitTimeout) -> SessionView {
        // Often it holds already (a reply comes after its writes are confirmed, so its state has
        // usually arrived): no stream, no tasks.
        let now = view
        if predicate(now) { return now }
        // The store looks at each view where it applies it and yields only one the predicate
        // holds for, so this task wakes once, not for every update of the session on the way.
        return try await firstView(timeout: timeout, expected, where: predicate, accepting: { _ in true })
    }

    /// `waitUntil` for a predicate that touches the caller's own state (a terminal's controller,
    /// a rendered screen): it runs in this task, once for each update of the session, so it need
    /// not be `Sendable`. The task wakes for every update on the way.
    @discardableResult
    public func waitUntilInTask(
        timeout: Duration = .seconds(5), _ expected: String = "the condition",
        _ predicate: (SessionView) -> Bool
    ) async throws(SessionWaitTimeout) -> SessionView {
        let now = view
        if predicate(now) { return now }
        return try await firstView(timeout: timeout, expected, where: { _ in true }, accepting: predicate)
    }

    /// The first view the store yields (those `include` holds for, looked at where they are
    /// applied) that `accept` takes, or `SessionWaitTimeout` with the view as it is when `timeout`
    /// passes. Views and the alarm share one stream: a view is `.some`, the alarm is `nil`.
    private func firstView(
        timeout: Duration, _ expected: String, where include: @escaping @Sendable (SessionView) -> Bool,
        accepting accept: (SessionView) -> Bool
    ) async throws(SessionWaitTimeout) -> SessionView {
        let (signals, continuation) = AsyncStream<SessionView?>.makeStream()
        store.listen(to: continuation, where: include, as: { $0 })
        let alarm = Task {
            try? await Task.sleep(for: timeout)
            continuation.yield(nil)
        }
        defer {
            alarm.cancel()
            continuation.finish()
        }
        for await signal in signals {
            guard let view = signal else { break }
            if accept(view) { return view }
        }
        throw SessionWaitTimeout(expected: expected, timeout: timeout, view: view, events: events(last: 12))
    }

    // MARK: Lifecycle

    /// Closes the session (`coord.app` closeSession); the client keeps following until `stop()`.
    public func close() async throws(SessionClientError) {
        let call = BusConnection.call("closeSession", args: ["session": session])
        _ = try await BusConnection.coordinatorCall(requester, call, session: session, writer: options.name, capability: capability)
    }

    /// Sends `touch` to coord.app a third of the session's idle limit apart while the session is
    /// open (the limit comes with its record; until it shows, the client looks each second).
    func keepAlive() {
        keepingAlive.withLock { task in
            guard task == nil else { return }
            task = Task { [weak self] in
                while !Task.isCancelled {
                    // Until the record (with the limit) shows, look again each second.
                    let limit = self?.view.record?.idleLimitSeconds ?? 0
                    try? await Task.sleep(for: limit == 0 ? .seconds(1) : .milliseconds(Int(limit) * 1000 / 3))
                    guard let self, !Task.isCancelled else { return }
                    guard limit > 0, self.view.record?.open == true else { continue }
                    do {
                        try await self.touch()
                    } catch {
                        self.logger.debug("touch failed", metadata: ["flowbus.session": "\(self.session)", "flowbus.error": "\(error)"])
                    }
                }
            }
        }
    }

    /// Tells coord.app this client is still on the session (activity for its idle expiry).
    public func touch() async throws(SessionClientError) {
        let call = BusConnection.call("touch", args: ["session": session])
        _ = try await BusConnection.coordinatorCall(requester, call, session: session, writer: options.name, capability: capability)
    }

    /// Stops following and the request thread; idempotent.
    public func stop() {
        keepingAlive.withLock { $0?.cancel() }
        following.withLock { $0?.cancel() }
        coordinatorsFollowed.withLock { $0?.cancel() }
        agent?.stop()
        shared?.unregister(session)
        if ownsRequester { requester.stop() }
        store.finish()
    }

    /// A new idempotency key, unique per intent of this client.
    func nextIdempotencyKey() -> String {
        "\(options.name)/\(keyPrefix)/\(counter.add(1, ordering: .relaxed).newValue)"
    }
}
