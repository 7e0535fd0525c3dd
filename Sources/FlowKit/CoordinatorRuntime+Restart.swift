import FlowProtocol
import Foundation
import Logging

/// After a restart: the coordinator rebuilds what the map records of its sessions.
extension CoordinatorRuntime {
    /// Rebuilds every instance recorded under `/c/<name>/` (and, for the owner, every session's
    /// navigation and record) from the Clone map: the process carries on where its previous
    /// incarnation stopped.
    func restore() {
        let interrupted: [(session: SessionID, reason: String)] = state.withLock { state in
            for entry in map.entries(in: .coordinator(coordinatorName)) {
                guard let session = entry.key.session, let envelope = try? Envelope.decodeChecked(entry.value),
                      let record = try? envelope.unwrap(Flowbus_V1_CoordinatorInstance.self) else { continue }
                if record.released {
                    // A finished flow whose calls were not all answered: they are sent again, and
                    // the record goes with the last answer (or now, if it holds none).
                    if record.pending.isEmpty {
                        delete(.coordinatorInstance(coordinatorName, session))
                    } else {
                        state.outbox[session] = record.pending
                    }
                    continue
                }
                let instance = type.init(session: session.text, parent: record.parent)
                instance.children = record.children
                instance.context = record.context
                state.instances[session] = instance
                state.handled.set(session, record.handled, screens: watchedScreens)
                state.startedAt[session] = record.startedAtUnixNanos
                if !record.pending.isEmpty { state.outbox[session] = record.pending }
                if !record.applied.isEmpty { state.appliedCalls[session] = record.applied }
            }
            if isOwner {
                for entry in map.entries(in: .allSessions) {
                    guard let envelope = try? Envelope.decodeChecked(entry.value) else { continue }
                    switch entry.key {
                    case .navigation(let session):
                        if let navigation = try? envelope.unwrap(Navigation.self) { state.navigations[session] = navigation }
                    case .sessionMeta(let session):
                        if let record = try? envelope.unwrap(Flowbus_V1_SessionRecord.self) {
                            state.records[session] = record
                            // A restart gives every session a full idle period again.
                            state.lastActive[session] = now()
                        }
                    default:
                        break
                    }
                }
            }
            if !state.instances.isEmpty {
                logger.notice("resumed sessions from the clone snapshot", metadata: [
                    "flowbus.instances": "\(state.instances.count)", "flowbus.navigations": "\(state.navigations.count)",
                ])
            }
            // A session whose record says closed, or is gone while its navigation is not, was
            // being closed by the previous incarnation (the record is written closed first, and
            // the keys' deletes may land in any order).
            guard isOwner else { return [] }
            return state.navigations.all.compactMap { session, _ in
                let record = state.records[session]
                return record?.open == true ? nil : (session, record?.closedReason ?? "")
            }
        }
        for (session, reason) in interrupted {
            // Its close is finished, under the same keys, before any top screen appears again:
            // a view model that closed it already answers from memory, and none is made to show
            // a closed session's screen again.
            logger.notice("finished closing a session the previous incarnation was closing", metadata: ["flowbus.session": "\(session)"])
            _ = closeSession(session, reason: reason.isEmpty ? "its closing was cut short by a restart of the navigation owner" : reason)
        }
        resendPending()
        if isOwner { appearLostTopScreens() }
    }

    /// After a restart of the navigation owner: the `appear` of a session's new top screen may
    /// have been lost with the process that died (its calls to view models wait in memory, one
    /// session at a time). The navigation records the key of the `appear` its top screen was sent
    /// (`topAppearKey`), and a view model's state the key of the last `appear` it ran: where they
    /// differ, the top screen appears again under the recorded key, so a view model that did get
    /// it (its state not written yet) answers from memory instead of running it twice. A top
    /// screen uncovered without an `appear` (a dismissed sheet) appears again only when its view
    /// model shows no state for it.
    func appearLostTopScreens() {
        let navigations = state.withLock { state in
            state.navigations.all.map { (session: $0.0, navigation: $0.1, opened: state.records.openedAt($0.0)) }
        }
        var sent = 0
        for (session, navigation, opened) in navigations {
            guard let top = navigation.topScreen, !top.viewModel.isEmpty else { continue }
            let key = navigation.topAppearKey
            if key.isEmpty {
                guard !viewModelShows(top, in: session) else { continue }
                sendToViewModel(kind: top.kind, action: "appear", session: session, screen: top, version: navigation.version, opened: opened)
            } else {
                guard let version = LifecycleKey.version(ofAppear: key), shownAppearKey(of: top, in: session) != key else { continue }
                sendToViewModel(kind: top.kind, action: "appear", session: session, screen: top, version: version, opened: opened)
            }
            sent += 1
        }
        if sent > 0 { logger.notice("top screens appeared again after a restart", metadata: ["flowbus.sessions": "\(sent)"]) }
    }

    /// Whether the session's copy of `screen`'s view-model state is for that screen.
    func viewModelShows(_ screen: Screen, in session: SessionID) -> Bool {
        guard let name = try? ScreenName(screen.kind) else { return true }
        return shownState(of: name, in: session)?.screenID == screen.id
    }

    /// The key of the last `appear` the view model of `screen` ran for it in the session, as its
    /// state on the bus says ("" when it shows another screen or none).
    func shownAppearKey(of screen: Screen, in session: SessionID) -> String {
        guard let name = try? ScreenName(screen.kind), let shown = shownState(of: name, in: session),
              shown.screenID == screen.id else { return "" }
        return shown.appearKey
    }

    private func shownState(of name: ScreenName, in session: SessionID) -> Flowbus_V1_ViewState? {
        map.value(at: .viewModel(session, name)).flatMap { bytes in
            try? Envelope.decodeChecked(bytes).unwrap(Flowbus_V1_ViewState.self)
        }
    }
}
