import Clone
import FlowProtocol
import Foundation
import Logging
import Majordomo
import SwiftProtobuf
import ZeroMQ

/// Runs one coordinator kind as the MDP service `coord.<name>`: one instance per session,
/// recorded at `/c/<name>/<session>` and rebuilt from those records after a restart, fed with
/// the states of the screens it watches, its effects carried out in order.
///
/// The process of the root coordinator is also the **navigation owner**: the only writer of
/// `/s/<session>/nav` and `/s/<session>/meta`, applying every coordinator's navigation.
public final class CoordinatorRuntime: @unchecked Sendable {
    struct State {
        var instances: [String: Coordinator] = [:]
        var handled: [String: [String: UInt64]] = [:]
        var startedAt: [String: Int64] = [:]
        var navigations: [String: Navigation] = [:]
        var records: [String: Flowbus_V1_SessionRecord] = [:]
        /// Highest incarnation seen per writer: calls from an older one are fenced off.
        var fence: [String: UInt64] = [:]
        var fenced = 0
        var malformed = 0
    }

    public let name: String
    let type: Coordinator.Type
    let bus: PluginBus
    let agent: CloneAgent
    let caller: BusCaller
    let viewModelCaller: BusCaller?
    /// Whether this process is the navigation owner (the root coordinator's).
    let isOwner: Bool
    let state = Locked(State())
    let logger: Logger
    var writer: String { bus.environment.writer }
    var incarnation: UInt64 { bus.environment.incarnation }

    /// The app's coordinators by name: a screen this runtime shows takes its navigation actions
    /// from the declarations of the coordinator that owns it (Screen.owner).
    let peers: [String: Coordinator.Type]

    /// `peers`: every coordinator of the app (the owners of the screens this one may show).
    /// `navigationOwner`: this process is the root coordinator's, the only writer of every
    /// session's navigation (`/s/<session>/nav`) and record.
    public init(bus: PluginBus, coordinator: Coordinator.Type, peers: [Coordinator.Type] = [], navigationOwner: Bool = false) throws {
        let name = coordinator.name
        _ = try CoordinatorName(name)
        self.name = name
        self.type = coordinator
        self.peers = Dictionary((peers + [coordinator]).map { ($0.name, $0) }, uniquingKeysWith: { _, last in last })
        self.bus = bus
        self.isOwner = navigationOwner
        var logger = bus.logger
        logger[metadataKey: "flowbus.coordinator"] = "\(name)"
        self.logger = logger
        var subtrees = ["/c/\(name)/"] + coordinator.watchedScreens.map { "/v/\($0)/" }
        if navigationOwner { subtrees.append("/s/") }
        self.agent = try bus.makeAgent(subtrees: subtrees)
        self.caller = try bus.makeCaller(name: name)
        self.viewModelCaller = navigationOwner ? try bus.makeCaller(name: "\(name)-vm") : nil
    }

    /// Rebuilds the instances recorded on the bus, then serves until `stop` returns true.
    public func run(until stop: @escaping @Sendable () -> Bool) throws {
        let worker = try MajordomoWorker(
            context: bus.context, endpoint: bus.environment.broker, service: "coord.\(name)",
            configuration: bus.workerConfiguration(), logger: logger)
        let navigator = !isOwner
            ? try MajordomoClient(context: bus.context, endpoint: bus.environment.broker, configuration: bus.clientConfiguration(), logger: logger)
            : nil
        let deadline = ContinuousClock.now + .seconds(5)
        while !agent.isSynced && ContinuousClock.now < deadline && !stop() { Thread.sleep(forTimeInterval: 0.005) }
        restore()
        let watcher = Task.detached { [self] in
            for await update in agent.updates(prefix: "/v/", includeCurrent: true) {
                screenUpdate(update)
            }
        }
        logger.info("serving", metadata: ["flowbus.service": "coord.\(name)", "flowbus.instances": "\(state.withLock { $0.instances.count })"])
        while !stop() {
            guard let request = try worker.receive(timeout: .milliseconds(100)) else { continue }
            let (frames, bad) = EnvelopeService.reply(to: request.body, writer: writer) { envelope in
                handle(envelope, navigator: navigator)
            }
            if bad { state.withLock { $0.malformed += 1 } }
            worker.reply(to: request, body: frames)
        }
        watcher.cancel()
        worker.disconnect()
        caller.stop()
        viewModelCaller?.stop()
        agent.stop()
        logger.info("stopped")
    }

    // MARK: Requests

    func handle(_ envelope: Envelope, navigator: MajordomoClient?) -> Envelope {
        if envelope.holds(Flowbus_V1_CoordinatorCall.self), let call = try? envelope.unwrap(Flowbus_V1_CoordinatorCall.self) {
            return EnvelopeService.envelope(handleCall(call, envelope: envelope), answering: envelope, writer: writer, incarnation: incarnation)
        }
        if envelope.holds(Flowbus_V1_Intent.self), let intent = try? envelope.unwrap(Flowbus_V1_Intent.self) {
            return EnvelopeService.envelope(
                handleIntent(intent, envelope: envelope, navigator: navigator), answering: envelope, writer: writer, incarnation: incarnation)
        }
        state.withLock { $0.malformed += 1 }
        return EnvelopeService.wrongKind(
            envelope, expected: [Flowbus_V1_CoordinatorCall.protoMessageName, Flowbus_V1_Intent.protoMessageName], writer: writer)
    }

    func handleCall(_ call: Flowbus_V1_CoordinatorCall, envelope: Envelope) -> Flowbus_V1_CoordinatorReply {
        let session = envelope.session.isEmpty ? (call.args["session"] ?? "") : envelope.session
        if isOwner, call.method == "openSession" { return openSession(requested: call.args["session"] ?? session) }
        guard (try? SessionID(session)) != nil else {
            return Self.refusal(WireError(.invalidField, "the call \(call.method) names no valid session (\"\(session)\")",
                                          hint: "set Envelope.session to the session id"))
        }
        if let fenced = checkFence(envelope) { return fenced }
        switch call.method {
        case "start": return start(session: session, parent: call.args["parent"] ?? "", args: call.args)
        case "finish": return finish(session: session)
        case "navigate" where isOwner: return navigate(session: session, ops: call.ops, expected: call.expectedNavVersion)
        case "closeSession" where isOwner: return closeSession(session)
        default:
            return state.withLock { state -> Flowbus_V1_CoordinatorReply in
                guard let instance = state.instances[session] else {
                    return Self.refusal(noInstance(session, doing: call.method))
                }
                do {
                    let result = try instance.handle(call: call.method, args: call.args)
                    apply(instance, in: &state, syncNavigation: nil)
                    var reply = Flowbus_V1_CoordinatorReply()
                    reply.ok = true
                    reply.result = result
                    reply.navVersion = state.navigations[session]?.version ?? 0
                    return reply
                } catch {
                    return Self.refusal(Self.wireError(error))
                }
            }
        }
    }

    /// Calls from a writer older than one already seen are refused (FENCED): a coordinator
    /// process that was replaced and wakes up late must not act.
    func checkFence(_ envelope: Envelope) -> Flowbus_V1_CoordinatorReply? {
        guard !envelope.writer.isEmpty, envelope.incarnation > 0 else { return nil }
        return state.withLock { state in
            let newest = state.fence[envelope.writer] ?? 0
            if envelope.incarnation < newest {
                state.fenced += 1
                logger.warning("fenced a call from an older incarnation", metadata: [
                    "flowbus.writer": "\(envelope.writer)", "flowbus.incarnation": "\(envelope.incarnation)", "flowbus.newest": "\(newest)",
                ])
                return Self.refusal(WireError(
                    .fenced, "\(envelope.writer) incarnation \(envelope.incarnation) was replaced by incarnation \(newest); its call is ignored",
                    hint: "a restarted plugin carries on; this process should stop"))
            }
            state.fence[envelope.writer] = envelope.incarnation
            return nil
        }
    }

    func handleIntent(_ intent: Flowbus_V1_Intent, envelope: Envelope, navigator: MajordomoClient?) -> Flowbus_V1_IntentReply {
        let session = envelope.session
        guard (try? SessionID(session)) != nil else {
            return Self.intentRefusal(WireError(.invalidField, "the intent names no valid session (\"\(session)\")",
                                                hint: "set Envelope.session to the session id `flowbus sessions` lists"))
        }
        if isOwner, SessionActions.names.contains(intent.action) {
            return ownerIntent(intent, session: session)
        }
        let input = IntentInput(
            action: intent.action, fields: intent.fields, params: intent.params, session: session, screenID: intent.screenID, screen: intent.screen)
        var pendingNavigation: [NavigationOp]?
        var startsChildren = false
        let refusal: WireError? = state.withLock { state in
            guard let instance = state.instances[session] else { return noInstance(session, doing: intent.action) }
            do {
                try instance.handle(intent: input)
            } catch {
                return Self.wireError(error)
            }
            startsChildren = instance.effects.contains { if case .startChild = $0 { true } else { false } }
            pendingNavigation = apply(instance, in: &state, syncNavigation: isOwner ? nil : [])
            return nil
        }
        if let refusal { return Self.intentRefusal(refusal) }
        var reply = Flowbus_V1_IntentReply()
        reply.applied = true
        if let ops = pendingNavigation, !ops.isEmpty, let navigator {
            // A child flow started by this intent is live before its screen shows (its start
            // went out through the caller, which answers in order).
            if startsChildren, !caller.waitUntilIdle(timeout: .seconds(3)) {
                logger.warning("a child flow did not answer its start within 3 s; showing its screen anyway",
                               metadata: ["flowbus.session": "\(session)", "flowbus.action": "\(intent.action)"])
            }
            // The person's action waits for the owner's verdict: two clients acting at once on
            // one screen get one applied and one refused, never both.
            let answer = callSync(navigator, coordinator: "app", method: "navigate", session: session, ops: ops, expected: intent.screenVersion)
            reply.applied = answer.ok
            reply.screenVersion = answer.navVersion
            if !answer.ok { reply.error = answer.error }
        } else if isOwner {
            reply.screenVersion = state.withLock { $0.navigations[session]?.version ?? 0 }
        }
        return reply
    }

    func noInstance(_ session: String, doing what: String) -> WireError {
        WireError(.invalidField, "no \(name) flow is live in session \(session), so \"\(what)\" has nothing to act on",
                  hint: "the flow has ended; look at the session's current screen (`flowbus sessions`)")
    }

    // MARK: Lifecycle calls

    func start(session: String, parent: String, args: [String: String]) -> Flowbus_V1_CoordinatorReply {
        state.withLock { state in
            if state.instances[session] == nil {
                let instance = type.init(session: session, parent: parent)
                for (key, value) in args where key != "parent" && key != "session" { instance.context[key] = value }
                state.instances[session] = instance
                state.startedAt[session] = WallClock.nowUnixNanos()
                var handled: [String: UInt64] = [:]
                for screen in type.watchedScreens {
                    handled[screen] = storedState(screen: screen, session: session)?.state.screenVersion ?? 0
                }
                state.handled[session] = handled
                instance.start()
                apply(instance, in: &state, syncNavigation: nil, persist: true)
                logger.debug("started", metadata: ["flowbus.session": "\(session)", "flowbus.parent": "\(parent)"])
            }
            var reply = Flowbus_V1_CoordinatorReply()
            reply.ok = true
            return reply
        }
    }

    func finish(session: String) -> Flowbus_V1_CoordinatorReply {
        state.withLock { state in
            if let instance = state.instances[session] {
                release(instance, in: &state)
            }
            var reply = Flowbus_V1_CoordinatorReply()
            reply.ok = true
            return reply
        }
    }

    /// Finishes the instance's children, then the instance, and deletes its record.
    func release(_ instance: Coordinator, in state: inout State) {
        for child in instance.children { instance.finishChild(child) }
        instance.finish()
        apply(instance, in: &state, syncNavigation: nil, persist: false)
        let session = instance.session
        state.instances[session] = nil
        state.handled[session] = nil
        state.startedAt[session] = nil
        _ = try? agent.delete(key: "/c/\(name)/\(session)")
        logger.debug("finished", metadata: ["flowbus.session": "\(session)"])
    }

    // MARK: Effects

    /// Carries out the effects the instance recorded. Navigation is applied here when this
    /// process owns it; otherwise it is sent to the owner, or returned (when `syncNavigation`
    /// is non-nil) for the caller to send and wait for.
    @discardableResult
    func apply(_ instance: Coordinator, in state: inout State, syncNavigation: [NavigationOp]?, persist: Bool = true) -> [NavigationOp]? {
        var collected = syncNavigation
        let effects = instance.effects
        instance.effects = []
        let session = instance.session
        for effect in effects {
            switch effect {
            case .navigate(let declared):
                let ops = declared.map(offeringActions)
                if isOwner {
                    _ = applyNavigation(session: session, ops: ops, expected: 0, in: &state)
                } else if collected != nil {
                    collected?.append(contentsOf: ops)
                } else {
                    send(coordinator: "app", method: "navigate", session: session, ops: ops)
                }
            case .startChild(let child, let args):
                var callArgs = args
                callArgs["parent"] = name
                send(coordinator: child, method: "start", session: session, args: callArgs)
            case .finishChild(let child):
                send(coordinator: child, method: "finish", session: session)
            case .call(let coordinator, let method, let args):
                send(coordinator: coordinator, method: method, session: session, args: args)
            }
        }
        if persist, state.instances[session] === instance { record(instance, in: state) }
        if isOwner, instance.parent.isEmpty { writeSessionRecord(instance, in: &state) }
        return collected
    }

    func send(coordinator: String, method: String, session: String, args: [String: String] = [:], ops: [NavigationOp] = []) {
        guard let body = callBody(method: method, session: session, args: args, ops: ops, expected: 0) else { return }
        let logger = logger
        caller.call(service: "coord.\(coordinator)", body: [body]) { outcome in
            guard let frames = outcome.reply else { return }
            if let reply = Self.decodeReply(frames), !reply.ok {
                logger.warning("call refused", metadata: [
                    "flowbus.target": "coord.\(coordinator)", "flowbus.method": "\(method)", "flowbus.session": "\(session)",
                    "flowbus.error": "\(reply.error.message)",
                ])
            }
        }
    }

    func callSync(_ client: MajordomoClient, coordinator: String, method: String, session: String, ops: [NavigationOp], expected: UInt64) -> Flowbus_V1_CoordinatorReply {
        guard let body = callBody(method: method, session: session, args: [:], ops: ops, expected: expected) else {
            return Self.refusal(WireError(.internal, "the navigation call could not be encoded", hint: "report this as a bug"))
        }
        do {
            let frames = try client.request(service: "coord.\(coordinator)", body: [body])
            return Self.decodeReply(frames)
                ?? Self.refusal(WireError(.internal, "coord.\(coordinator) answered with something other than a CoordinatorReply", hint: "check its logs"))
        } catch {
            return Self.refusal(WireError(.unavailable, "coord.\(coordinator) did not answer: \(error)", hint: "check `flowbus ps`; retry the action"))
        }
    }

    func callBody(method: String, session: String, args: [String: String], ops: [NavigationOp], expected: UInt64) -> [UInt8]? {
        var call = Flowbus_V1_CoordinatorCall()
        call.method = method
        call.args = args
        call.ops = ops
        call.expectedNavVersion = expected
        return try? Envelope.wrapping(
            call, session: session, idempotencyKey: "\(writer)/\(incarnation)/\(UUID().uuidString)", writer: writer, incarnation: incarnation
        ).encoded()
    }

    static func decodeReply(_ frames: [Frame]) -> Flowbus_V1_CoordinatorReply? {
        guard frames.count == 1, let envelope = try? Envelope.decodeChecked(frames[0]) else { return nil }
        if let reply = try? envelope.unwrap(Flowbus_V1_CoordinatorReply.self) { return reply }
        if let error = try? envelope.unwrap(WireError.self) { return refusal(error) }
        return nil
    }

    static func wireError(_ error: any Error) -> WireError {
        if let refusal = error as? IntentRefusal { return WireError(refusal.code, refusal.message, hint: refusal.hint) }
        return WireError(.internal, "\(error)", hint: "report this as a bug")
    }

    static func refusal(_ error: WireError) -> Flowbus_V1_CoordinatorReply {
        var reply = Flowbus_V1_CoordinatorReply()
        reply.ok = false
        reply.error = error
        return reply
    }

    static func intentRefusal(_ error: WireError) -> Flowbus_V1_IntentReply {
        var reply = Flowbus_V1_IntentReply()
        reply.applied = false
        reply.error = error
        return reply
    }

    /// Writes the instance's record `/c/<name>/<session>`.
    func record(_ instance: Coordinator, in state: State) {
        var record = Flowbus_V1_CoordinatorInstance()
        record.coordinator = name
        record.session = instance.session
        record.parent = instance.parent
        record.children = instance.children
        record.incarnation = incarnation
        record.startedAtUnixNanos = state.startedAt[instance.session] ?? 0
        record.handled = state.handled[instance.session] ?? [:]
        record.context = instance.context
        write(key: "/c/\(name)/\(instance.session)", record, session: instance.session, keyVersion: 0)
    }

    func write(key: String, _ message: some SwiftProtobuf.Message, session: String, keyVersion: UInt64) {
        do {
            let bytes = try Envelope.wrapping(message, session: session, writer: writer, incarnation: incarnation, keyVersion: keyVersion).encoded()
            _ = try agent.set(key: key, value: bytes)
        } catch {
            logger.error("write failed", metadata: ["flowbus.key": "\(key)", "flowbus.error": "\(error)"])
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

    func screenUpdate(_ update: CloneUpdate) {
        let parts = update.key.split(separator: "/")
        guard parts.count == 3, parts[0] == "v", !update.isDelete else { return }
        let screen = String(parts[1])
        let session = String(parts[2])
        guard type.watchedScreens.contains(screen),
              let envelope = try? Envelope.decodeChecked(update.value),
              let value = try? envelope.unwrap(Flowbus_V1_ViewState.self) else { return }
        state.withLock { state in
            guard let instance = state.instances[session] else { return }
            let handled = state.handled[session]?[screen] ?? 0
            guard value.screenVersion > handled else { return }
            state.handled[session, default: [:]][screen] = value.screenVersion
            // Act first, record after: a crash in between acts again, and every action is idempotent.
            instance.screenChanged(ScreenChange(screen: screen, state: value.viewModelState, payload: value.shownPayload, screenID: value.screenID))
            apply(instance, in: &state, syncNavigation: nil)
        }
    }

    func storedState(screen: String, session: String) -> (state: Flowbus_V1_ViewState, envelope: Envelope)? {
        guard let entry = agent.get("/v/\(screen)/\(session)"), !entry.value.isEmpty,
              let envelope = try? Envelope.decodeChecked(entry.value),
              let value = try? envelope.unwrap(Flowbus_V1_ViewState.self) else { return nil }
        return (value, envelope)
    }

    // MARK: Restart

    /// Rebuilds every instance recorded under `/c/<name>/` (and, for the owner, every session's
    /// navigation and record) from the Clone map: the process carries on where its previous
    /// incarnation stopped.
    func restore() {
        state.withLock { state in
            let prefix = "/c/\(name)/"
            for entry in agent.entries(prefix: prefix) where !entry.value.isEmpty {
                guard let envelope = try? Envelope.decodeChecked(entry.value),
                      let record = try? envelope.unwrap(Flowbus_V1_CoordinatorInstance.self) else { continue }
                let instance = type.init(session: record.session, parent: record.parent)
                instance.children = record.children
                instance.context = record.context
                state.instances[record.session] = instance
                state.handled[record.session] = record.handled
                state.startedAt[record.session] = record.startedAtUnixNanos
            }
            if isOwner {
                for entry in agent.entries(prefix: "/s/") where !entry.value.isEmpty {
                    guard let envelope = try? Envelope.decodeChecked(entry.value) else { continue }
                    if entry.key.hasSuffix("/nav"), let navigation = try? envelope.unwrap(Navigation.self) {
                        state.navigations[envelope.session] = navigation
                    } else if entry.key.hasSuffix("/meta"), let record = try? envelope.unwrap(Flowbus_V1_SessionRecord.self) {
                        state.records[record.session] = record
                    }
                }
            }
            if !state.instances.isEmpty {
                logger.notice("resumed sessions from the clone snapshot", metadata: [
                    "flowbus.instances": "\(state.instances.count)", "flowbus.navigations": "\(state.navigations.count)",
                ])
            }
        }
    }
}
