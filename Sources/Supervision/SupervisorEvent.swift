/// What happened to a plugin process, in the order it happened.
public enum SupervisorEvent: Sendable, Equatable {
    case started(InstanceID, pid: Int32, incarnation: Int)
    case exited(InstanceID, pid: Int32, reason: ExitReason)
    /// A restart is scheduled after this delay.
    case restarting(InstanceID, after: Duration)
    /// It exited once too often within the intensity period; it stays down.
    case gaveUp(InstanceID, reason: ExitReason)
    /// `stop()` ended it (or cancelled its pending restart).
    case stopped(InstanceID)

    public var instance: InstanceID {
        switch self {
        case let .started(id, _, _), let .exited(id, _, _), let .restarting(id, _), let .gaveUp(id, _), let .stopped(id): id
        }
    }
}
