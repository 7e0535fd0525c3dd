import FlowProtocol
import Logging
import MessagePath

/// Who may make a request of the runtime: its capability (a closed host's rule), then, for the
/// coordinators' own calls, the fence against a replaced incarnation.
extension CoordinatorRuntime {
    /// The FORBIDDEN error when `envelope` lacks the capability `needed` on `session`, counted
    /// and logged (at the 1st, 2nd, 4th… refusal); nil when it may go on.
    func guardRequest(_ envelope: Envelope, needs needed: SessionRight, session: SessionID, doing what: String) -> WireError? {
        guard let error = SessionGuard.refusal(envelope, needs: needed, session: session, key: capabilities, doing: what) else { return nil }
        let count = state.withLock { state -> Int in
            state.forbidden += 1
            return state.forbidden
        }
        SessionGuard.log(error, count: count, session: session, envelope: envelope, logger: logger)
        return error
    }

    /// Calls from a writer older than one already seen are refused (FENCED): a coordinator
    /// process that was replaced and wakes up late must not act.
    func checkFence(_ envelope: Envelope) -> Flowbus_V1_CoordinatorReply? {
        guard !envelope.writer.isEmpty, envelope.incarnation > 0, plantedBug != .ignoreFencing else { return nil }
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
}
