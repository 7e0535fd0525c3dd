import FlowProtocol
import Foundation
import Logging

/// The owner's view of its sessions: activity for idle expiry, which view models published, and
/// a late navigation of its previous incarnation.
extension CoordinatorRuntime {
    /// Notes a change in a session the owner follows: activity, which view model published, and
    /// a navigation a previous incarnation of this owner wrote ahead of the one it holds.
    func noteActivity(_ change: StateEntry) {
        guard let session = change.key.session else { return }
        // Decoded outside the lock: one envelope per navigation change (this owner's own, mostly),
        // and the navigation itself only when an older incarnation of this owner wrote it.
        var fromOlderIncarnation: Navigation?
        if case .navigation = change.key, !change.isDelete, let envelope = try? Envelope.decodeChecked(change.value),
           envelope.writer == writer, envelope.incarnation < incarnation {
            fromOlderIncarnation = try? envelope.unwrap(Navigation.self)
        }
        state.withLock { state in
            switch change.key {
            case .viewModel(_, let screen) where !change.isDelete:
                noteViewModel(screen, of: session, in: &state)
            case .navigation:
                // Held only while it is the map's navigation and ahead of this incarnation's:
                // anything written after it (this owner's next version, a delete) replaces it.
                if let navigation = fromOlderIncarnation, knows(session, in: state),
                   navigation.version > state.navigations.version(of: session) ?? 0 {
                    state.navigationsAhead[session] = navigation
                } else {
                    state.navigationsAhead[session] = nil
                }
            default:
                break
            }
            touch(session, in: &state)
        }
    }

    /// Whether `session` is open here: its record or an instance is held (a closed one stays closed).
    func knows(_ session: SessionID, in state: State) -> Bool {
        state.records[session] != nil || state.instances[session] != nil
    }

    /// Notes activity in an open session (one the owner knows; a closed one stays closed).
    func touch(_ session: SessionID, in state: inout State) {
        guard isOwner, knows(session, in: state) else { return }
        state.lastActive[session] = now()
    }

    /// Notes that `screen`'s view model published a state in the open session `session`.
    func noteViewModel(_ screen: ScreenName, of session: SessionID, in state: inout State) {
        guard isOwner, knows(session, in: state) else { return }
        let bit: Int
        if let index = state.viewModelNames.firstIndex(of: screen) {
            bit = index
        } else if state.viewModelNames.count < UInt64.bitWidth {
            state.viewModelNames.append(screen)
            bit = state.viewModelNames.count - 1
        } else {
            state.moreViewModels[session, default: []].insert(screen)
            return
        }
        state.viewModels[session, default: 0] |= 1 << UInt64(bit)
    }

    /// The view models that published a state in `session`, as the owner noted them (from its
    /// stream of the session's changes, which starts with every state the map held at start).
    func viewModelKinds(of session: SessionID, in state: State) -> Set<String> {
        var kinds: Set<String> = []
        let bits = state.viewModels[session] ?? 0
        for (index, name) in state.viewModelNames.enumerated() where bits & (1 << UInt64(index)) != 0 {
            kinds.insert(name.text)
        }
        for name in state.moreViewModels[session] ?? [] { kinds.insert(name.text) }
        return kinds
    }

    /// How long the open session `session` has seen no activity (the owner only); nil when unknown.
    public func idleTime(of session: SessionID) -> Duration? {
        let instant = now()
        return state.withLock { $0.lastActive[session].map { instant - $0 } }
    }

    /// Closes, as `closeSession` does, every session idle for the limit or longer; returns them.
    @discardableResult
    public func expireIdleSessions() -> [SessionID] {
        guard isOwner, let idleLimit else { return [] }
        let instant = now()
        let idle = state.withLock { state in
            state.lastActive.filter { instant - $0.value >= idleLimit }.map(\.key).sorted()
        }
        for session in idle {
            _ = closeSession(session, reason: "idle for \(idleLimit.components.seconds) s")
            state.withLock { $0.expired += 1 }
            logger.notice("closed an idle session", metadata: [
                "flowbus.session": "\(session)", "flowbus.idleLimit": "\(idleLimit.components.seconds) s",
            ])
        }
        return idle
    }
}
