/// When a plugin process that exited is started again, with OTP's meanings.
public enum RestartPolicy: String, Codable, Sendable, CaseIterable {
    /// Always restarted.
    case permanent
    /// Restarted only after an abnormal exit: a non-zero status or a signal.
    case transient
    /// Never restarted.
    case temporary

    func restarts(after reason: ExitReason) -> Bool {
        switch self {
        case .permanent: true
        case .transient: reason.isAbnormal
        case .temporary: false
        }
    }
}
