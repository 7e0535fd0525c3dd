import FlowHost
import Foundation

/// `flowbus up --detach`: the same command in a new session, its output in the host log,
/// and this process returns once the host answers on its control socket.
enum Detached {
    /// Returns the host's pid once it answers.
    @discardableResult
    static func start(arguments: [String], runDirectory: RunDirectory, timeout: TimeInterval = 30) throws -> pid_t {
        if let live = try runDirectory.liveHost() {
            throw HostError.alreadyRunning(pid: live.pid, runDirectory: runDirectory.path)
        }
        try runDirectory.create()
        let pid = try spawn(arguments: Array(arguments.dropFirst()), logPath: runDirectory.hostLogPath)
        let control = ControlClient(runDirectory: runDirectory, timeout: .milliseconds(500))
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                throw HostError.startFailed("the host exited during start-up; its log \(runDirectory.hostLogPath) ends with:\n\(tail(runDirectory.hostLogPath))")
            }
            if let descriptor = try? runDirectory.liveHost(), descriptor.pid == pid,
               let _: HostDescriptor = try? control.send(ControlRequest(command: .ping)) {
                print("flowbus host \(pid) running in the background — broker \(descriptor.endpoints.broker), clone \(descriptor.endpoints.cloneSnapshot); `flowbus ps` shows it, `flowbus down` stops it; log: \(runDirectory.hostLogPath)")
                return pid
            }
            usleep(50_000)
        }
        kill(pid, SIGTERM)
        throw HostError.startFailed("the host did not become ready within \(Int(timeout)) s; see \(runDirectory.hostLogPath)")
    }

    private static func spawn(arguments: [String], logPath: String) throws -> pid_t {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // A new session: the host outlives this terminal and its Ctrl-C.
        // 0x80 is glibc's POSIX_SPAWN_SETSID, which Swift does not import.
        posix_spawnattr_setflags(&attributes, Int16(0x80))
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, logPath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        markInheritedDescriptorsCloseOnExec()

        let executable = ExecutablePath.path
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        guard result == 0 else {
            throw HostError.startFailed("cannot start \(executable) in the background: \(String(cString: strerror(result)))")
        }
        return pid
    }

    /// Nothing else this process holds open (a caller's pipe, above all) may outlive it in the
    /// host, or whoever reads our output would wait for the host to end.
    private static func markInheritedDescriptorsCloseOnExec() {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return }
        for descriptor in names.compactMap(Int32.init) where descriptor > 2 {
            let flags = fcntl(descriptor, F_GETFD)
            if flags >= 0 { _ = fcntl(descriptor, F_SETFD, flags | FD_CLOEXEC) }
        }
    }

    private static func tail(_ path: String, lines: Int = 15) -> String {
        guard let data = FileManager.default.contents(atPath: path) else { return "(no log)" }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").suffix(lines).joined(separator: "\n")
    }
}
