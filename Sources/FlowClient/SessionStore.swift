import Clone
import FlowProtocol
import Foundation
import Synchronization
import SwiftProtobuf

/// The session's view, its fencing table and its event log, behind one lock, and the streams of
/// views that follow it. Applies Clone updates of `/s/<id>/` and `/c/*/<id>`.
final class SessionStore: Sendable {
    struct KeyFence {
        /// Per writer, the highest incarnation accepted for this key.
        var incarnations: [String: UInt64] = [:]
        /// Per writer, the key_version last accepted within that incarnation.
        var keyVersions: [String: UInt64] = [:]
    }

    /// Where views go: a stream's continuation, seen through what it does with them.
    struct Listener {
        var yield: @Sendable (SessionView) -> Void
        var finish: @Sendable () -> Void
    }

    struct State {
        var view: SessionView
        var fences: [String: KeyFence] = [:]
        var events: [SessionEvent] = []
        var eventCount = 0
        var listeners: [Int: Listener] = [:]
        var nextListener = 0
        /// Set once the client stops: a listener that comes later ends at once.
        var finished = false
    }

    let session: SessionID
    let maxEvents: Int
    let state: Mutex<State>
    /// Held while views are handed to listeners, so they arrive in order. Never yield or finish
    /// a continuation under `state`: cancelling a stream runs its onTermination (which takes
    /// `state`) while the runtime holds the waiting task's lock, and a yield needs that lock.
    private let delivery = Mutex<Void>(())

    init(session: SessionID, maxEvents: Int) {
        self.session = session
        self.maxEvents = maxEvents
        state = Mutex(State(view: SessionView(session: session.text)))
    }

    var view: SessionView { state.withLock { $0.view } }

    func events(last count: Int? = nil) -> [SessionEvent] {
        state.withLock { state in Array(state.events.suffix(min(count ?? maxEvents, maxEvents))) }
    }

    /// A stream that starts with the current view and yields every later one for which `include`
    /// holds.
    func views(where include: @escaping @Sendable (SessionView) -> Bool = { _ in true }) -> AsyncStream<SessionView> {
        let (stream, continuation) = AsyncStream<SessionView>.makeStream()
        listen(to: continuation, where: include, as: { $0 })
        return stream
    }

    /// Yields `wrap(view)` to `continuation` for the current view and every later one for which
    /// `include` holds, until the stream ends; a stream of another element type can carry other
    /// signals beside the views (`SessionClient.waitUntil`'s alarm), with no task in between.
    /// `include` runs where the view is applied (the Clone agent's thread), one view at a time and
    /// in order, so a task that waits for some view wakes for that one only, not for each update
    /// of the session; it must not call back into this store's listeners.
    func listen<Element>(
        to continuation: AsyncStream<Element>.Continuation, where include: @escaping @Sendable (SessionView) -> Bool = { _ in true },
        as wrap: @escaping @Sendable (SessionView) -> Element
    ) {
        let listener = Listener(yield: { view in if include(view) { continuation.yield(wrap(view)) } }, finish: { continuation.finish() })
        let id = delivery.withLock { _ -> Int? in
            let (id, view) = register(listener)
            listener.yield(view)
            if id == nil { listener.finish() }
            return id
        }
        guard let id else { return }
        continuation.onTermination = { [weak self] _ in
            self?.state.withLock { _ = $0.listeners.removeValue(forKey: id) }
        }
    }

    /// Calls `look` with the current view and every later one, where each is applied (the Clone
    /// agent's thread), one at a time and in order, until it returns true, the returned function
    /// is called, or the store finishes (then `ended` runs, once). No stream and no task: a
    /// caller that needs only to learn when some views came (a benchmark's milestones) is not
    /// woken for each update. `look` must be quick and must not call back into this store's
    /// watches or streams.
    func watch(_ look: @escaping @Sendable (SessionView) -> Bool, ended: @escaping @Sendable () -> Void) -> @Sendable () -> Void {
        // The listener's id once it is registered, and whether the watch is over.
        let slot = Mutex<(id: Int?, over: Bool)>((nil, false))
        let remove: @Sendable () -> Void = { [weak self] in
            let id = slot.withLock { slot -> Int? in
                defer { slot.over = true }
                return slot.over ? nil : slot.id
            }
            if let id { self?.state.withLock { _ = $0.listeners.removeValue(forKey: id) } }
        }
        let listener = Listener(
            yield: { view in
                guard !slot.withLock({ $0.over }), look(view) else { return }
                remove()
            },
            finish: {
                guard !slot.withLock({ $0.over }) else { return }
                remove()
                ended()
            })
        delivery.withLock { _ in
            let (id, view) = register(listener)
            // Cancelled before it was registered: it ends here.
            let cancelled = slot.withLock { slot in
                slot.id = id
                return slot.over
            }
            if cancelled {
                if let id { state.withLock { _ = $0.listeners.removeValue(forKey: id) } }
            } else {
                listener.yield(view)
                if id == nil { listener.finish() }
            }
        }
        return remove
    }

    /// Adds `listener` and returns its id with the current view; a store already finished adds
    /// nothing (nil), and the caller ends the listener after the view. Call under `delivery`.
    private func register(_ listener: Listener) -> (id: Int?, view: SessionView) {
        state.withLock { state in
            guard !state.finished else { return (nil, state.view) }
            let id = state.nextListener
            state.nextListener += 1
            state.listeners[id] = listener
            return (id, state.view)
        }
    }

    func finish() {
        delivery.withLock { _ in
            let listeners = state.withLock { state in
                defer {
                    state.listeners = [:]
                    state.finished = true
                }
                return Array(state.listeners.values)
            }
            for listener in listeners { listener.finish() }
        }
    }

    /// Logs something this client did (an intent, a reply).
    func note(_ kind: SessionEvent.Kind, writer: String) {
        state.withLock { state in
            append(SessionEvent(index: 0, kind: kind, sequence: 0, key: "", writer: writer, incarnation: 0,
                                sentAtUnixNanos: 0, at: Date()), to: &state)
        }
    }

    func apply(_ update: CloneUpdate) {
        delivery.withLock { _ in
            let changed = state.withLock { state -> (SessionView, [Listener])? in
                guard apply(update, to: &state) else { return nil }
                state.view.lastSequence = max(state.view.lastSequence, update.sequence)
                return (state.view, Array(state.listeners.values))
            }
            guard let (view, listeners) = changed else { return }
            for listener in listeners { listener.yield(view) }
        }
    }

    private func append(_ event: SessionEvent, to state: inout State) {
        var event = event
        state.eventCount += 1
        event.index = state.eventCount
        state.events.append(event)
        // Trimmed in batches (the log may run up to half again over its limit), not one event per
        // append: a simulated session at its limit would shift its whole log on every update.
        if state.events.count > maxEvents + max(16, maxEvents / 2) { state.events.removeFirst(state.events.count - maxEvents) }
    }

    private func event(_ kind: SessionEvent.Kind, _ update: CloneUpdate, _ envelope: Envelope?, to state: inout State) {
        append(SessionEvent(
            index: 0, kind: kind, sequence: update.sequence, key: update.key, writer: envelope?.writer ?? "",
            incarnation: envelope?.incarnation ?? 0, sentAtUnixNanos: envelope?.sentAtUnixNanos ?? 0, at: Date()), to: &state)
    }

    /// Returns whether the view changed.
    private func apply(_ update: CloneUpdate, to state: inout State) -> Bool {
        let target: SessionKey
        switch try? CloneKey(parsing: update.key) {
        case .navigation(session): target = .navigation
        case .sessionMeta(session): target = .record
        case .viewModel(session, let screen): target = .state(screen.text)
        case .coordinatorInstance(let coordinator, session): target = .coordinator(coordinator.text)
        case .appSchema(let package):
            guard !update.isDelete else { return state.view.schemas.removeValue(forKey: package) != nil }
            guard let schema = AppSchema.published(key: update.key, value: update.value) else {
                state.view.malformedValues += 1
                return true
            }
            state.view.schemas[schema.package] = schema
            return true
        default:
            return false
        }

        if update.isDelete {
            state.fences[update.key]?.keyVersions = [:]
            switch target {
            case .navigation:
                if state.view.navigation != nil, state.view.closedReason == nil { state.view.closedReason = "closed" }
                state.view.navigation = nil
            case .record: state.view.record = nil
            case .state(let kind): state.view.states[kind] = nil
            case .coordinator(let name):
                // Gone already if its flow was released first (a record marked released).
                if state.view.coordinators.removeValue(forKey: name) != nil {
                    event(.coordinator(name: name, live: false), update, nil, to: &state)
                }
                return true
            }
            event(.deleted(key: update.key), update, nil, to: &state)
            return true
        }

        guard let envelope = try? Envelope.decodeChecked(update.value) else {
            state.view.malformedValues += 1
            return true
        }
        if let refusal = fence(envelope, key: update.key, in: &state) {
            switch refusal {
            case .fenced(let newest):
                state.view.fencedValues += 1
                event(.fenced(key: update.key, newest: newest), update, envelope, to: &state)
            case .duplicate:
                guard case .state(let kind) = target, let rewritten = Self.appearRecorded(envelope, over: state.view.states[kind]) else {
                    state.view.duplicateValues += 1
                    return true
                }
                // The same state written again to carry a later `appear`'s key: taken, so that the
                // screen is known to be this appearance's (`SessionView.state(of:)`).
                state.view.states[kind] = ScreenState(
                    kind: kind, state: rewritten, writer: envelope.writer, incarnation: envelope.incarnation, sequence: update.sequence)
            }
            return true
        }
        do {
            switch target {
            case .navigation:
                let navigation = try envelope.unwrap(Flowbus_V1_Navigation.self)
                state.view.navigation = navigation
                let view = state.view
                event(.navigation(version: navigation.version, top: view.screen ?? "", stack: view.stack,
                                  tab: view.tab ?? "", modal: view.modal?.kind ?? ""), update, envelope, to: &state)
            case .record:
                let record = try envelope.unwrap(Flowbus_V1_SessionRecord.self)
                state.view.record = record
                state.view.closedReason = record.open ? nil : (record.closedReason.isEmpty ? "closed" : record.closedReason)
                event(.record(user: record.user, flow: record.flow, open: record.open), update, envelope, to: &state)
            case .state(let kind):
                let viewState = try envelope.unwrap(Flowbus_V1_ViewState.self)
                let screen = ScreenState(kind: kind, state: viewState, writer: envelope.writer,
                                         incarnation: envelope.incarnation, sequence: update.sequence)
                state.view.states[kind] = screen
                event(.state(screen: kind, phase: screen.phase, screenVersion: screen.screenVersion,
                             message: screen.message, notice: screen.notice), update, envelope, to: &state)
            case .coordinator(let name):
                let instance = try envelope.unwrap(Flowbus_V1_CoordinatorInstance.self)
                let wasLive = state.view.coordinators[name] != nil
                if instance.released {
                    // Finished, its record kept only until the calls it sent are answered.
                    state.view.coordinators[name] = nil
                    if wasLive { event(.coordinator(name: name, live: false), update, envelope, to: &state) }
                    return true
                }
                state.view.coordinators[name] = CoordinatorInstanceView(name: name, instance: instance)
                if !wasLive { event(.coordinator(name: name, live: true), update, envelope, to: &state) }
            }
        } catch {
            state.view.malformedValues += 1
        }
        return true
    }

    /// A view model writes a state again at the same version when an `appear` changed nothing,
    /// to carry that appear's key (`ViewState.appear_key`); its key_version is not above the last
    /// one, as for a duplicate. The state it holds when it is that rewrite: the same version as
    /// `current`, and an appear key naming a later navigation version than `current`'s (an older
    /// copy served again names an earlier one, or the same).
    static func appearRecorded(_ envelope: Envelope, over current: ScreenState?) -> Flowbus_V1_ViewState? {
        guard let current, let state = try? envelope.unwrap(Flowbus_V1_ViewState.self),
              state.screenVersion == current.screenVersion, state.screenID == current.screenID,
              let later = LifecycleKey.version(ofAppear: state.appearKey) else { return nil }
        let earlier = LifecycleKey.version(ofAppear: current.state.appearKey) ?? 0
        return later > earlier ? state : nil
    }

    enum SessionKey {
        case navigation, record
        case state(String)
        case coordinator(String)
    }

    enum FenceRefusal {
        case fenced(newest: UInt64)
        case duplicate
    }

    /// Protocols/README.md §5: a value from an older incarnation of a writer that already wrote
    /// this key is ignored; within one incarnation a key_version not above the last one is a duplicate.
    private func fence(_ envelope: Envelope, key: String, in state: inout State) -> FenceRefusal? {
        let writer = envelope.writer
        var fence = state.fences[key] ?? KeyFence()
        defer { state.fences[key] = fence }
        let newest = fence.incarnations[writer] ?? 0
        if envelope.incarnation < newest { return .fenced(newest: newest) }
        if envelope.incarnation > newest {
            fence.incarnations[writer] = envelope.incarnation
            fence.keyVersions[writer] = envelope.keyVersion
            return nil
        }
        if envelope.keyVersion > 0, let last = fence.keyVersions[writer], envelope.keyVersion <= last, last > 0 {
            return .duplicate
        }
        fence.keyVersions[writer] = envelope.keyVersion
        return nil
    }
}
