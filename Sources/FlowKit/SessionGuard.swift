import FlowProtocol
import Logging
import MessagePath

/// The runtimes' check of `Envelope.capability` on a closed host (`Protocols/README.md` §10):
/// a request acts on its session only with a token granting the right it needs. Without the
/// host's key (open mode, or a runtime made for tests) every request passes.
enum SessionGuard {
    /// Nil when `envelope` may do what `needed` allows on `session`; else the FORBIDDEN error.
    static func refusal(_ envelope: Envelope, needs needed: SessionRight, session: SessionID, key: CapabilityKey?, doing what: String) -> WireError? {
        guard let key else { return nil }
        let presented = envelope.capability
        let held = presented.isEmpty ? nil : key.right(of: presented, session: session.text)
        if held?.covers(needed) == true { return nil }
        if presented.isEmpty {
            return WireError(
                .forbidden, "\(what) on session \(session) carries no capability, and this host lets only a session's holders act on it",
                hint: needed == .plugin
                    ? "only the host's own plugins may do this"
                    : "send the capability openSession returned in Envelope.capability (Protocols/README.md §10)")
        }
        return WireError(
            .forbidden,
            held.map { "\(what) needs the \(needed.rawValue) right on session \(session); the capability presented grants only \($0.rawValue)" }
                ?? "\(what): the capability presented is not one this host made for session \(session)",
            hint: needed == .plugin
                ? "only the host's own plugins may do this"
                : "use the drive capability openSession returned for this session; a watch capability can only read")
    }

    /// Logs the `count`th refusal when `count` is 1, 2, 4, 8…: a flood cannot flood the log.
    static func log(_ error: WireError, count: Int, session: SessionID, envelope: Envelope, logger: Logger) {
        guard count.nonzeroBitCount == 1 else { return }
        logger.warning("refused a request without the right capability", metadata: [
            "flowbus.session": "\(session)", "flowbus.writer": "\(envelope.writer)", "flowbus.error": "\(error.message)",
            "flowbus.forbidden": "\(count)",
        ])
    }
}

extension Envelope {
    /// The same envelope carrying `key`'s plugin capability for its session (unchanged without a key).
    func signed(by key: CapabilityKey?) -> Envelope {
        guard let key else { return self }
        var signed = self
        signed.capability = key.token(.plugin, session: session)
        return signed
    }
}
