import Foundation
import Synchronization
import Testing

/// tmux servers the tests started and have not stopped: killed at exit (tests stop theirs from a
/// task in a defer, which the test process may not live to run after its last test).
private let unstoppedServers = Mutex<Set<String>>([])
private let serverCleanupInstalled = Atomic<Bool>(false)

/// A tmux server of its own (its own socket) running real terminal clients in panes of a fixed
/// size: keys go in with send-keys, the screen comes out with capture-pane, as a person would use it.
public struct Tmux: Sendable {
    public let socket = "fbt-\(UUID().uuidString.prefix(8))"

    public init() {}

    /// Runs a tmux command with posix_spawn and waitpid. Its output goes through a file, never a
    /// pipe: the first command forks the tmux server, which inherits descriptors and would keep a
    /// pipe (and its reader) open for as long as it runs.
    public func tmux(_ arguments: [String]) async throws -> FlowbusProcesses.Outcome {
        let file = NSTemporaryDirectory() + "\(socket)-\(UUID().uuidString.prefix(6)).out"
        let arguments = ["tmux", "-L", socket] + arguments
        return try await onThread {
            defer { try? FileManager.default.removeItem(atPath: file) }
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 1, file, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
            let environment = ProcessInfo.processInfo.environment.merging(["TERM": "xterm-256color"]) { _, new in new }
            let argv = arguments.map { strdup($0) } + [nil]
            let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
            defer { (argv + envp).forEach { free($0) } }
            var pid: pid_t = 0
            var attributes = Tmux.spawnAttributes()
            defer { posix_spawnattr_destroy(&attributes) }
            let spawned = posix_spawnp(&pid, "tmux", &actions, &attributes, argv, envp)
            guard spawned == 0 else { throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .ENOENT) }
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0, errno == EINTR {}
            let text = FileManager.default.contents(atPath: file).map { String(decoding: $0, as: UTF8.self) } ?? ""
            // Exited normally: the code is in bits 8-15; killed by a signal: report it as 128 + signal.
            let code = status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
            return FlowbusProcesses.Outcome(status: code, output: text)
        }
    }

    /// Opens a window named `name` running `command` (a shell line); the first one sets the size
    /// of every window (`columns`×`rows`).
    /// The pane stays after the command ends, with its exit status printed, so a test can read it.
    public func open(_ name: String, _ command: String, rows: Int = 30, columns: Int = 100) async throws {
        let line = "\(command); echo CLIENT-EXIT=$?; sleep 600"
        let result: FlowbusProcesses.Outcome
        if try await tmux(["has-session", "-t", "main"]).status == 0 {
            result = try await tmux(["new-window", "-d", "-t", "main", "-n", name, line])
        } else {
            // A detached session's windows take its size. (tmux 3.3a's server dies on new-window
            // after `window-size manual`, so the size is left to -x/-y.)
            result = try await tmux(["new-session", "-d", "-s", "main", "-n", name, "-x", "\(columns)", "-y", "\(rows)", line])
            unstoppedServers.withLock { _ = $0.insert(socket) }
            if !serverCleanupInstalled.exchange(true, ordering: .relaxed) {
                atexit {
                    for socket in unstoppedServers.withLock({ $0 }) { Tmux.killServer(socket) }
                }
            }
        }
        try #require(result.status == 0, "tmux could not open \(name): \(result.output)")
    }

    /// Types into a window: each argument is a key name tmux knows (Tab, Enter, Escape, C-c, BTab)
    /// or literal text.
    public func send(_ name: String, _ keys: String...) async throws {
        for key in keys {
            let result = try await tmux(["send-keys", "-t", "main:\(name)"] + (Self.keyNames.contains(key) ? [key] : ["-l", key]))
            try #require(result.status == 0, "send-keys \(key) to \(name): \(result.output)")
            // A person's pace: the client reads keys every 40 ms; an escape sequence must not split.
            try await Task.sleep(for: .milliseconds(60))
        }
    }

    public static let keyNames: Set<String> = ["Tab", "BTab", "Enter", "Escape", "BSpace", "Up", "Down", "Left", "Right", "C-c", "C-q", "Space", "F1", "F2"]

    /// Resizes a window, as a person dragging the terminal's corner.
    public func resize(_ name: String, rows: Int, columns: Int) async throws {
        let result = try await tmux(["resize-window", "-t", "main:\(name)", "-x", "\(columns)", "-y", "\(rows)"])
        try #require(result.status == 0, "resize-window \(name): \(result.output)")
    }

    public func screen(_ name: String) async throws -> String {
        try await tmux(["capture-pane", "-p", "-t", "main:\(name)"]).output
    }

    /// Waits until the window shows every one of `texts` (and none of `absent`); fails the test with the screen when it does not.
    @discardableResult
    public func waitFor(_ name: String, _ texts: [String], absent: [String] = [], timeout: Duration = .seconds(20),
                 sourceLocation: SourceLocation = #_sourceLocation) async throws -> String {
        var last = ""
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            last = try await screen(name)
            if texts.allSatisfy(last.contains), !absent.contains(where: last.contains) { return last }
            try await Task.sleep(for: .milliseconds(100))
        }
        Issue.record("window \(name) did not show \(texts)\(absent.isEmpty ? "" : " without \(absent)") within \(timeout); it shows:\n\(last)",
                     sourceLocation: sourceLocation)
        throw CancellationError()
    }

    /// The session id on a client's status line.
    public func session(_ name: String) async throws -> String {
        let screen = try await screen(name)
        guard let range = screen.range(of: #"session [A-Za-z0-9._-]+"#, options: .regularExpression) else {
            Issue.record("no session id on the status line of \(name):\n\(screen)")
            throw CancellationError()
        }
        return String(screen[range].dropFirst("session ".count))
    }

    public func stop() async {
        _ = try? await tmux(["kill-server"])
        unstoppedServers.withLock { _ = $0.remove(socket) }
    }

    /// `stop()` for a `defer`: kills the server before the test returns, whatever way it ends
    /// (a `Task` started in a `defer` may never run once the last test is done).
    public func stopNow() {
        Self.killServer(socket)
        unstoppedServers.withLock { _ = $0.remove(socket) }
    }

    /// Spawn attributes that give tmux (and so every pane) no blocked signals and the default
    /// action for hang-up, interrupt, terminate and broken pipe. The test process blocks some of
    /// them for its own signal handling, and a child inherits its mask: a pane that cannot see
    /// SIGHUP outlives `kill-server`, and its tmux server with it.
    public static func spawnAttributes() -> posix_spawnattr_t {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGHUP, SIGINT, SIGTERM, SIGPIPE] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        return attributes
    }

    /// `tmux kill-server` on `socket`, waited for. It hangs up every pane, so the clients in them quit.
    public static func killServer(_ socket: String) {
        var pid: pid_t = 0
        let words: [String] = ["tmux", "-L", socket, "kill-server"]
        let argv: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
        var attributes = spawnAttributes()
        defer { posix_spawnattr_destroy(&attributes) }
        if posix_spawnp(&pid, "tmux", nil, &attributes, argv, environ) == 0 {
            while waitpid(pid, nil, 0) < 0, errno == EINTR {}
        }
        argv.forEach { free($0) }
    }
}
