import Foundation

/// What can stop a host or a command that talks to it, each saying what to do.
public enum HostError: Error, CustomStringConvertible, Equatable {
    case alreadyRunning(pid: Int32, runDirectory: String)
    case notRunning(runDirectory: String)
    case noAnswer(endpoint: String, timeout: Duration)
    case curveRequired(endpoint: String)
    case unreadableKeyFile(path: String, reason: String)
    case invalidEndpoint(String, reason: String)
    case rejected(command: String, reason: String)
    case startFailed(String)
    /// The app registry (Plugins/apps.yaml) is missing, unreadable, or does not name the app.
    case appRegistry(String)

    public var description: String {
        switch self {
        case .alreadyRunning(let pid, let directory):
            "a flowbus host is already running (pid \(pid), run directory \(directory)); stop it with `flowbus down`, or start another with --run-dir DIR"
        case .notRunning(let directory):
            "no flowbus host is running in \(directory); start one with `flowbus up` (or pass the --run-dir it uses)"
        case .noAnswer(let endpoint, let timeout):
            "the host did not answer at \(endpoint) within \(timeout); it may be stuck or stopping: check its log in <run-dir>/logs/host.log, or kill it and run `flowbus up` again"
        case .curveRequired(let endpoint):
            "\(endpoint) listens beyond this machine, which requires CURVE: pass --curve-secret FILE and --allow FILE (make key pairs with `flowbus keys`), or listen on 127.0.0.1"
        case .unreadableKeyFile(let path, let reason):
            "cannot use the key file \(path): \(reason); make one with `flowbus keys --out NAME`"
        case .invalidEndpoint(let endpoint, let reason):
            "\(endpoint) is not a usable endpoint: \(reason)"
        case .rejected(let command, let reason):
            "the host refused `\(command)`: \(reason)"
        case .startFailed(let reason):
            "the host could not start: \(reason)"
        case .appRegistry(let problem):
            problem
        }
    }
}
