import CFlowHost

/// Why a plugin process is no longer running.
public enum ExitReason: Sendable, Equatable, CustomStringConvertible {
    case exited(status: Int32)
    case signaled(Int32)
    /// It could not be started again (the command vanished, fork failed…).
    case couldNotStart(String)
    /// Something other than the supervisor reaped it, so its status is unknown.
    case vanished

    init(waitStatus status: Int32) {
        if cflowhost_signaled(status) != 0 {
            self = .signaled(cflowhost_term_signal(status))
        } else {
            self = .exited(status: cflowhost_exit_status(status))
        }
    }

    /// A non-zero status or a signal: what `transient` restarts after.
    public var isAbnormal: Bool {
        self != .exited(status: 0)
    }

    public var description: String {
        switch self {
        case let .exited(status): "exited with status \(status)"
        case let .signaled(signal): "killed by signal \(signal)\(SignalName.of(signal).map { " (\($0))" } ?? "")"
        case let .couldNotStart(why): "could not start: \(why)"
        case .vanished: "vanished (reaped elsewhere, status unknown)"
        }
    }
}

enum SignalName {
    private static let names: [Int32: String] = [
        1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT", 7: "SIGBUS",
        8: "SIGFPE", 9: "SIGKILL", 10: "SIGUSR1", 11: "SIGSEGV", 12: "SIGUSR2", 13: "SIGPIPE",
        14: "SIGALRM", 15: "SIGTERM", 17: "SIGCHLD", 18: "SIGCONT", 19: "SIGSTOP", 20: "SIGTSTP",
        24: "SIGXCPU", 25: "SIGXFSZ", 31: "SIGSYS",
    ]

    static func of(_ signal: Int32) -> String? { names[signal] }
}
