import Clone
import FlowProtocol
import Foundation
import Logging
import MessagePath
import Synchronization

/// The navigation owner's part of the runtime: sessions, their navigation and their record.
extension CoordinatorRuntime {
    /// Opens a new session, or attaches to the open session `requested`. An id no open session
    /// has is refused (a mistyped id must not open a session of its own) unless `create` asks
    /// for a new session under that id. `peer` is who asked, as a closed broker names it (nil in
    /// open mode and in tests): a client opens at most `limits.perClient`.
    func openSession(requested: String, create: Bool = false, peer: String? = nil) -> Flowbus_V1_CoordinatorReply {
        if !requested.isEmpty, (try? SessionID(requested)) == nil {
            return Self.refusal(WireError(.invalidField, "\"\(requested)\" is not a valid session id",
                                          hint: "use 1 to 128 characters from A-Z a-z 0-9 . _ -, or leave it empty for a new session"))
        }
        return state.withLock { state in
            var reply = Flowbus_V1_CoordinatorReply()
            reply.ok = true
            if let requested = try? SessionID(requested), state.instances[requested] != nil {
                reply.result["session"] = requested.text
                reply.result["attached"] = "true"
                grantCapabilities(on: requested, in: &reply)
                reply.navVersion = state.navigations.version(of: requested) ?? 0
                touch(requested, in: &state)
                return reply
            }
            if !requested.isEmpty, !create {
                return Self.refusal(WireError(
                    .invalidField, "no session \(requested) is open on this host, so there is nothing to attach to",
                    hint: "`flowbus sessions` lists the open ones; to open a new session under this id, ask with create (`flowbus client --session \(requested) --create`)"))
            }
            let session = (try? SessionID(requested)) ?? Self.newSessionID()
            if let refusal = refusalToOpen(for: SessionLimits.client(peer), in: &state) { return refusal }
            if let client = SessionLimits.client(peer) {
                // The client's name as the table holds it already: its sessions share one string.
                let held = state.openByClient.index(forKey: client).map { state.openByClient.keys[$0] } ?? client
                state.openedBy[session] = held
                state.openByClient[held, default: 0] += 1
            }
            let instance = type.init(session: session.text, parent: "")
            if let record = state.records[session], !record.user.isEmpty { instance.context["user"] = record.user }
            var record = state.records[session] ?? Flowbus_V1_SessionRecord()
            record.session = session.text
            if record.openedAtUnixNanos == 0 { record.openedAtUnixNanos = WallClock.nowUnixNanos() }
            record.open = true
            state.records[session] = record
            state.instances[session] = instance
            state.startedAt[session] = WallClock.nowUnixNanos()
            touch(session, in: &state)
            instance.start()
            apply(instance, of: session, in: &state, syncNavigation: nil)
            // The new session's record reaches the map once: `apply` writes it when the root's
            // start changed it (a flow, a user in its context), and the table then holds that
            // one; else it still holds the record made above, written here.
            if state.records[session] == record {
                writeSessionRecord(instance, of: session, in: &state, force: true)
            }
            logger.info("session opened", metadata: ["flowbus.session": "\(session)"])
            reply.result["session"] = session.text
            grantCapabilities(on: session, in: &reply)
            return reply
        }
    }

    /// Why no new session may open now: the host's limit, or the asking client's. Nil: it may.
    private func refusalToOpen(for client: String?, in state: inout State) -> Flowbus_V1_CoordinatorReply? {
        if state.instances.count >= limits.open {
            state.sessionsRefused += 1
            logger.warning("refused to open a session: the limit of open sessions is reached", metadata: [
                "flowbus.open": "\(state.instances.count)", "flowbus.limit": "\(limits.open)",
            ])
            return Self.refusal(WireError(
                .unavailable, "this host has \(state.instances.count) open sessions, its limit; no new one can open now",
                hint: "close sessions you no longer use (`flowbus sessions` lists them; idle ones close by themselves), or raise the owner's --max-sessions"))
        }
        if let client, let held = state.openByClient[client], held >= limits.perClient {
            state.sessionsRefused += 1
            logger.warning("refused to open a session: the client holds its limit of open sessions", metadata: [
                "flowbus.peer": "\(client)", "flowbus.open": "\(held)", "flowbus.limit": "\(limits.perClient)",
            ])
            return Self.refusal(WireError(
                .unavailable, "you (\(client)) already hold \(held) open sessions, the most one client may hold on this host",
                hint: "close sessions you no longer use (coord.app closeSession), attach to one you hold, or ask the host's operator to raise --max-sessions-per-client"))
        }
        return nil
    }

    /// A closed host's openSession reply carries the session's tokens: `capability` (drive) for the
    /// client that opened or attached, `watch` for observers it lets in.
    func grantCapabilities(on session: SessionID, in reply: inout Flowbus_V1_CoordinatorReply) {
        guard let capabilities else { return }
        reply.result["capability"] = capabilities.token(.drive, session: session.text)
        reply.result["watch"] = capabilities.token(.watch, session: session.text)
    }

    /// Ends the session: its flows are released, its view models told to `close`, and its record
    /// written once more (open = false, why) before every key of it is deleted, the record last.
    func closeSession(_ session: SessionID, reason: String) -> Flowbus_V1_CoordinatorReply {
        state.withLock { state in
            state.lastActive[session] = nil
            if let client = state.openedBy.removeValue(forKey: session) {
                let left = (state.openByClient[client] ?? 1) - 1
                state.openByClient[client] = left > 0 ? left : nil
            }
            if let instance = state.instances[session] { release(instance, of: session, in: &state) }
            if var record = state.records[session] {
                record.open = false
                record.closedReason = reason
                write(.sessionMeta(session), record, keyVersion: nextRecordVersion())
            }
            // Resets still held for the session are dropped: `close` deletes what they would empty.
            heldResets.withLock { _ = $0.removeValue(forKey: session) }
            // Every view model that ever published a state of the session deletes it (`close`).
            let kinds = viewModelKinds(of: session, in: state)
                .union(state.navigations[session]?.allScreens.filter { !$0.viewModel.isEmpty }.map(\.kind) ?? [])
            let version = (state.navigations.version(of: session) ?? 0) + 1
            let opened = state.records.openedAt(session)
            for kind in kinds.sorted() {
                sendToViewModel(kind: kind, action: "close", session: session, screen: nil, version: version, opened: opened)
            }
            state.navigations[session] = nil
            state.navigationsAhead[session] = nil
            state.records[session] = nil
            state.viewModels[session] = nil
            state.moreViewModels[session] = nil
            delete(.navigation(session))
            delete(.sessionMeta(session))
            state.lastActive[session] = nil
            logger.info("session closed", metadata: ["flowbus.session": "\(session)", "flowbus.reason": "\(reason)"])
            var reply = Flowbus_V1_CoordinatorReply()
            reply.ok = true
            return reply
        }
    }

    func navigate(session: SessionID, ops: [NavigationOp], expected: UInt64, key: String) -> Flowbus_V1_CoordinatorReply {
        state.withLock { state in
            guard state.instances[session] != nil || state.navigations.contains(session) else {
                return Self.refusal(WireError(.invalidField, "session \(session) is not open, so its navigation cannot change",
                                              hint: "open a session first (coord.app openSession)"))
            }
            return applyNavigation(session: session, ops: ops, expected: expected, key: key, in: &state)
        }
    }

    /// The version the change with idempotency key `key` made, if `navigation` remembers it
    /// (its current version when it keeps none for it: written by an older owner).
    static func appliedVersion(of key: String, in navigation: Navigation) -> UInt64? {
        guard !key.isEmpty, let index = navigation.appliedKeys.lastIndex(of: key) else { return nil }
        let versions = navigation.appliedVersions
        let version = versions.count == navigation.appliedKeys.count ? versions[index] : 0
        return version > 0 ? version : navigation.version
    }

    /// The refusal of an action made on navigation version `made` when the session's is `now`.
    static func staleNavigation(made: UInt64, now: UInt64) -> WireError {
        WireError(
            .staleIntent,
            "the screen changed since this action was made (navigation version \(made), now \(now)); the action was not applied",
            hint: "look at the screen again and repeat the action if you still want it")
    }

    /// back, selectTab, ok: navigation actions any screen has, applied by the owner itself.
    func ownerIntent(_ intent: Flowbus_V1_Intent, session: SessionID, key: String) -> Flowbus_V1_IntentReply {
        state.withLock { state in
            guard let known = state.navigations[session] else {
                return Self.intentRefusal(WireError(.invalidField, "session \(session) has no navigation yet",
                                                    hint: "wait for its first screen, or open a new session"))
            }
            // What `ok`, `back` and `selectTab` do is read from the navigation the client acted on.
            let navigation = takingUpAhead(known, expected: intent.screenVersion, session: session, in: &state)
            let ops: [NavigationOp]
            switch intent.action {
            case _ where Self.appliedVersion(of: key, in: navigation) != nil:
                // A retry of one applied, by this owner or before its restart: `applyNavigation`
                // answers it from the navigation's keys, not refused for what the screen shows
                // now (`ok` with the modal gone).
                ops = []
            case "back": ops = navigation.hasModal ? [.dismiss] : [.pop()]
            case "selectTab": ops = navigation.selecting(tab: intent.fields["tab"] ?? "")
            default:
                guard navigation.hasModal else {
                    return Self.intentRefusal(WireError(.invalidField, "there is no modal to close", hint: "look at the screen again"))
                }
                ops = [.dismiss]
            }
            let answer = applyNavigation(session: session, ops: ops, expected: intent.screenVersion, key: key, current: navigation, in: &state)
            var reply = Flowbus_V1_IntentReply()
            reply.applied = answer.ok
            reply.screenVersion = answer.navVersion
            if !answer.ok { reply.error = answer.error }
            return reply
        }
    }

    /// Applies `ops` to the session's navigation as one change (version + 1), publishes it,
    /// and tells the view models of the screens that appeared or left.
    ///
    /// `key` is the idempotency key of the intent or call that asks: a change is recorded with the
    /// keys of the last ones and the versions they made (`Navigation.appliedKeys`,
    /// `appliedVersions`, on the bus with the change itself), so a retry of one that was applied,
    /// even after the owner restarted, is answered with the version it made and not applied again
    /// (nor refused as stale). `current`: the session's navigation
    /// when the caller has decoded it already (the table keeps it encoded).
    func applyNavigation(
        session: SessionID, ops: [NavigationOp], expected: UInt64, key: String = "", current: Navigation? = nil, in state: inout State
    ) -> Flowbus_V1_CoordinatorReply {
        let before = takingUpAhead(current ?? state.navigations[session] ?? Navigation(), expected: expected, session: session, in: &state)
        if let version = Self.appliedVersion(of: key, in: before) {
            state.retriesAnswered += 1
            var reply = Flowbus_V1_CoordinatorReply()
            reply.ok = true
            reply.navVersion = version
            return reply
        }
        if expected != 0, expected != before.version {
            var reply = Self.refusal(Self.staleNavigation(made: expected, now: before.version))
            reply.navVersion = before.version
            return reply
        }
        var navigation = before
        let changed: Bool
        do {
            changed = try navigation.apply(ops)
        } catch {
            var reply = Self.refusal(WireError(.invalidField, error.description, hint: "look at the screen again"))
            reply.navVersion = before.version
            return reply
        }
        let offered = SessionActions.offered(by: navigation)
        if navigation.actions != offered {
            navigation.actions = offered
        }
        if changed {
            navigation.version = before.version + 1
            if !key.isEmpty {
                // One version per key: those of a navigation an older owner wrote without them
                // read as 0, "the current one".
                let missing = navigation.appliedKeys.count - navigation.appliedVersions.count
                if missing > 0 {
                    navigation.appliedVersions.insert(contentsOf: repeatElement(0, count: missing), at: 0)
                } else if missing < 0 {
                    navigation.appliedVersions.removeFirst(-missing)
                }
                navigation.appliedKeys.append(key)
                navigation.appliedVersions.append(navigation.version)
                let over = navigation.appliedKeys.count - Self.rememberedNavigationKeys
                if over > 0 {
                    navigation.appliedKeys.removeFirst(over)
                    navigation.appliedVersions.removeFirst(over)
                }
            }
            let appearing = screenToAppear(session: session, before: before, after: navigation)
            if let appearing {
                navigation.topAppearKey = Self.appearKey(session: session, screen: appearing, version: navigation.version)
            } else if navigation.topScreen?.id != before.topScreen?.id {
                navigation.topAppearKey = ""
            }
            state.navigations[session] = navigation
            write(.navigation(session), navigation, keyVersion: navigation.version)
            followUp(session: session, before: before, after: navigation, appearing: appearing, in: &state)
        }
        var reply = Flowbus_V1_CoordinatorReply()
        reply.ok = true
        reply.navVersion = navigation.version
        return reply
    }

    /// `navigation`, or the newer one this owner's previous incarnation wrote that reached the
    /// map after this one restored (held on the way while its process was replaced), when a
    /// request was made on a version past `navigation`'s. Clients see that one and act on it, and
    /// nothing of this incarnation came after it (its writes would have fenced it off): it is the
    /// session's navigation, and is taken up.
    func takingUpAhead(_ navigation: Navigation, expected: UInt64, session: SessionID, in state: inout State) -> Navigation {
        guard expected > navigation.version, let ahead = navigationAhead(of: navigation.version, in: session, state: state) else {
            return navigation
        }
        logger.notice("took up a navigation the previous incarnation wrote after this one restored", metadata: [
            "flowbus.session": "\(session)", "flowbus.version": "\(ahead.version)", "flowbus.was": "\(navigation.version)",
        ])
        state.navigations[session] = ahead
        return ahead
    }

    /// The new top screen whose view model gets `appear` (it loads, or publishes its state with
    /// its presentation and actions), or nil when none does.
    ///
    /// A screen a modal was dismissed from does not appear again (a sheet's semantics: it stayed
    /// loaded underneath), so its state keeps the version a client acted on — unless its view
    /// model shows no state for it (its `appear` was lost with an owner that died).
    func screenToAppear(session: SessionID, before: Navigation, after: Navigation) -> Screen? {
        guard isOwner else { return nil }
        func same(_ one: Screen?, _ other: Screen?) -> Bool {
            one?.id == other?.id && one?.kind == other?.kind && one?.params == other?.params
        }
        let uncovered = before.hasModal && !after.hasModal && same(before.selectedStack?.screens.last, after.topScreen)
        guard let top = after.topScreen, !top.viewModel.isEmpty, !same(before.topScreen, top),
              !uncovered || !viewModelShows(top, in: session) else { return nil }
        return top
    }

    /// `appear` to `appearing` (`screenToAppear`); `reset` to the view models whose last screen
    /// left the navigation and that have something of the session to reset: they were sent an
    /// `appear` in it or published a state of it (`noteViewModel`). A tab's root screen never
    /// selected was never shown: its view model holds nothing of the session, and a `reset`
    /// would only make it publish an empty state under a key of its own (for every tab left
    /// unvisited when a signed-in flow ends). The session record (decoded for when it was opened)
    /// is read only when one is sent.
    func followUp(session: SessionID, before: Navigation, after: Navigation, appearing: Screen?, in state: inout State) {
        guard isOwner else { return }
        var left = Set(before.allScreens.filter { !$0.viewModel.isEmpty }.map(\.kind)).subtracting(after.allScreens.map(\.kind))
        if !left.isEmpty { left.formIntersection(viewModelKinds(of: session, in: state)) }
        guard appearing != nil || !left.isEmpty else { return }
        let opened = state.records.openedAt(session)
        guard let appearing else {
            for kind in left.sorted() {
                sendToViewModel(kind: kind, action: "reset", session: session, screen: nil, version: after.version, opened: opened)
            }
            return
        }
        // The screens that left are reset once the one that came has answered its `appear` (or
        // after `resetHoldLimitNanoseconds`, 250 ms, when it has not): a
        // reset makes its view model publish an empty state (two keys, which every follower of
        // the session takes in), and sent at once, three or four of them (a signed-in flow
        // ending) took the two CPUs from the new screen's first state, which the person waits
        // for. Held, each still goes before anything else sent to its view model later
        // (`sendToViewModel`), so their order holds.
        for kind in left.sorted() {
            if let message = viewModelMessage(kind: kind, action: "reset", session: session, screen: nil, version: after.version, opened: opened) {
                holdReset(message, kind: kind, session: session)
            }
        }
        if !left.isEmpty {
            // An `appear` whose view model is down is tried for 20 s: the resets do not wait that long.
            let limit = Double(resetHoldLimitNanoseconds.load(ordering: .relaxed)) / 1e9
            DispatchQueue.global().asyncAfter(deadline: .now() + limit) { [weak self] in self?.releaseHeldResets(of: session) }
        }
        // Noted now, not when its state comes: a `reset` or `close` must reach it even if the
        // screen leaves before its view model has published.
        if let name = try? ScreenName(appearing.kind) { noteViewModel(name, of: session, in: &state) }
        sendToViewModel(kind: appearing.kind, action: "appear", session: session, screen: appearing, version: after.version, opened: opened)
    }

    /// An `appear`, `reset` or `close` ready to post: the view model's service, the lane its
    /// messages keep their order on, and the signed envelope.
    struct ViewModelMessage: Sendable {
        var service: String
        var lane: String
        var body: [UInt8]
    }

    func holdReset(_ reset: ViewModelMessage, kind: String, session: SessionID) {
        let replaced = heldResets.withLock { held in held[session, default: [:]].updateValue(reset, forKey: kind) }
        resetsHeld.add(1, ordering: .relaxed)
        // A reset of the same view model held before (its screen left twice before an appear
        // was answered) goes first: each is the reset of its own screen.
        if let replaced { viewModelCalls?.post(service: replaced.service, body: replaced.body, lane: replaced.lane) }
    }

    /// Posts the resets held for `session` (of one view model, or all of them); returns how many.
    @discardableResult
    func releaseHeldResets(of session: SessionID, kind: String? = nil) -> Int {
        let released: [ViewModelMessage] = heldResets.withLock { held in
            guard var resets = held[session] else { return [] }
            let taken: [ViewModelMessage]
            if let kind {
                taken = resets.removeValue(forKey: kind).map { [$0] } ?? []
            } else {
                taken = resets.keys.sorted().compactMap { resets[$0] }
                resets = [:]
            }
            held[session] = resets.isEmpty ? nil : resets
            return taken
        }
        for reset in released {
            viewModelCalls?.post(service: reset.service, body: reset.body, lane: reset.lane)
        }
        return released.count
    }

    /// Resets waiting for an `appear`'s answer now, over every session.
    var heldResetCount: Int { heldResets.withLock { $0.values.reduce(0) { $0 + $1.count } } }

    /// The session's navigation on the map when an older incarnation of this writer wrote it at a
    /// version above `version`; else nil. The owner's map keeps no navigation values: such a
    /// write is noted as it arrives (`noteActivity`, `State.navigationsAhead`).
    func navigationAhead(of version: UInt64, in session: SessionID, state: State) -> Navigation? {
        state.navigationsAhead[session].flatMap { $0.version > version ? $0 : nil }
    }

    static func appearKey(session: SessionID, screen: Screen, version: UInt64) -> String {
        LifecycleKey.make(action: "appear", session: session, target: screen.id, version: version)
    }

    /// `opened`: when the session was opened (its record's `opened_at_unix_nanos`, 0 if unknown),
    /// so a view model that closed it tells a late `appear` of that opening from a new opening's.
    func sendToViewModel(kind: String, action: String, session: SessionID, screen: Screen?, version: UInt64, opened: Int64) {
        // A reset held for this view model goes first, so that what it is sent keeps its order.
        if releaseHeldResets(of: session, kind: kind) > 0 { resetsSentEarly.add(1, ordering: .relaxed) }
        guard let message = viewModelMessage(kind: kind, action: action, session: session, screen: screen, version: version, opened: opened) else {
            return
        }
        guard action == "appear" else {
            viewModelCalls?.post(service: message.service, body: message.body, lane: message.lane)
            return
        }
        let key = LifecycleKey.make(action: action, session: session, target: screen?.id ?? kind, version: version)
        postAppear(message.body, key: key, service: message.service, lane: message.lane, session: session)
    }

    /// The signed envelope of `action` to the view model of `kind`, with its service and lane;
    /// nil when it cannot be encoded.
    func viewModelMessage(kind: String, action: String, session: SessionID, screen: Screen?, version: UInt64, opened: Int64) -> ViewModelMessage? {
        var intent = Flowbus_V1_Intent()
        intent.screen = kind
        intent.action = action
        intent.sessionOpenedAtUnixNanos = opened
        if let screen {
            intent.screenID = screen.id
            intent.params = screen.params
        }
        let key = LifecycleKey.make(action: action, session: session, target: screen?.id ?? kind, version: version)
        guard let body = try? Envelope.wrapping(intent, session: session.text, idempotencyKey: key, writer: writer, incarnation: incarnation)
            .signed(by: capabilities).encoded() else { return nil }
        return ViewModelMessage(service: "vm.\(kind)", lane: Self.viewModelLane(session: session, kind: kind), body: body)
    }

    /// Posts an `appear`; when every try failed (its view model was gone for longer than they
    /// last), posts it again a second later, behind what its lane holds by then, for as long as
    /// it is the session's top appear and this runtime serves: a client waits for the state of a
    /// screen's appearance (`SessionView.state(of:)`), and an `appear` given up on would leave
    /// the screen without it.
    func postAppear(_ body: [UInt8], key: String, service: String, lane: String, session: SessionID) {
        viewModelCalls?.post(service: service, body: body, lane: lane, tries: ServiceCallPolicy.postTries) { [weak self] outcome in
            // Answered or given up on, the screens it replaced are reset now.
            self?.releaseHeldResets(of: session)
            guard case .failure(let error) = outcome, let self, self.stillToAppear(key, in: session) else { return }
            self.appearsSentAgain.add(1, ordering: .relaxed)
            self.logger.warning("a view model took no appear after every try; sending it again while its screen is on top", metadata: [
                "flowbus.service": "\(service)", "flowbus.session": "\(session)", "flowbus.key": "\(key)", "flowbus.error": "\(error.reason)",
            ])
            DispatchQueue.global().asyncAfter(deadline: .now() + Self.appearRetryPause) { [weak self] in
                guard let self, self.stillToAppear(key, in: session) else { return }
                self.postAppear(body, key: key, service: service, lane: lane, session: session)
            }
        }
    }

    /// How long the owner waits before it sends again an `appear` every try of which failed.
    static let appearRetryPause = 1.0

    /// Whether `key` is still the session's top appear, and this runtime still serves.
    func stillToAppear(_ key: String, in session: SessionID) -> Bool {
        !stopped.load(ordering: .acquiring) && state.withLock { $0.navigations[session]?.topAppearKey } == key
    }

    /// The lane of the owner's calls to one view model in one session: `appear`, `reset` and
    /// `close` to the same view model stay in the order sent; those to different view models go
    /// out side by side (as many at once as the caller has threads), so a screen's `appear` is
    /// not queued behind the `reset` of the screen just left.
    static func viewModelLane(session: SessionID, kind: String) -> String {
        "\(session.text)/\(kind)"
    }

    func writeSessionRecord(_ instance: Coordinator, of session: SessionID, in state: inout State, force: Bool = false) {
        var record = state.records[session] ?? Flowbus_V1_SessionRecord()
        let before = record
        record.session = session.text
        record.user = instance.context["user"] ?? ""
        record.flow = instance.context["flow"] ?? ""
        record.open = true
        record.idleLimitSeconds = UInt32(clamping: idleLimit?.components.seconds ?? 0)
        guard force || record != before else { return }
        state.records[session] = record
        write(.sessionMeta(session), record, keyVersion: nextRecordVersion())
    }

    static func newSessionID() -> SessionID {
        let alphabet = Array("abcdefghijkmnpqrstuvwxyz23456789")
        // Ten letters of the alphabet above always make a valid id.
        return try! SessionID(String((0..<10).map { _ in alphabet.randomElement()! }))
    }
}
