import Glibc

/// Why the supervisor could not do what it was asked.
public enum SupervisorError: Error, Equatable, Sendable, CustomStringConvertible {
    case commandNotFound(plugin: String, command: String, searched: [String])
    case spawnFailed(plugin: String, failure: SpawnFailure)
    case logDirectoryUnavailable(path: String, reason: String)
    case alreadyStarted
    case unknownInstance(InstanceID)
    case notRunning(InstanceID)
    case signalFailed(InstanceID, pid: Int32, errno: Int32)

    public var description: String {
        switch self {
        case let .commandNotFound(plugin, command, searched):
            let folders = searched.isEmpty ? "(no folders)" : searched.joined(separator: ":")
            return "could not start plugin \(plugin): command `\(command)` was not found in \(folders) — "
                + "check the manifest's command, or build the plugin and pass its folder to the search path"
        case let .spawnFailed(plugin, failure):
            return "could not start plugin \(plugin): \(failure)"
        case let .logDirectoryUnavailable(path, reason):
            return "could not create the log folder \(path): \(reason) — choose a writable folder for plugin logs"
        case .alreadyStarted:
            return "this supervisor was already started — a Supervisor runs once; create a new one to start again"
        case let .unknownInstance(id):
            return "no plugin instance \(id) — check the plugin name and replica against the manifest"
        case let .notRunning(id):
            return "plugin instance \(id) has no running process — see its state in the status"
        case let .signalFailed(id, pid, errno):
            return "could not signal \(id) (pid \(pid)): \(ErrnoText.describe(errno))"
        }
    }
}

/// The step of starting a process that failed, with the errno the system gave.
public struct SpawnFailure: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Step: Sendable, Equatable {
        case pipe, openLog, fork, childSetup, exec
    }

    public var step: Step
    public var errno: Int32
    public var path: String
    public var logPath: String

    public var description: String {
        let cause = ErrnoText.describe(errno)
        switch step {
        case .exec:
            let extra = errno == EACCES ? " and that the file is executable" : ""
            return "\(path): \(cause) — check the manifest's command\(extra)"
        case .openLog:
            return "cannot open its log \(logPath): \(cause) — check that the log folder is writable"
        case .fork:
            return "fork failed: \(cause) — the machine may be out of processes or memory"
        case .pipe:
            return "cannot create a pipe: \(cause) — the host may be out of file descriptors"
        case .childSetup:
            return "the child could not redirect its input and output: \(cause)"
        }
    }
}

enum ErrnoText {
    static func describe(_ code: Int32) -> String {
        "\(String(cString: strerror(code))) (errno \(code))"
    }
}
