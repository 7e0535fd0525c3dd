import CFlowHost
import Glibc

/// Starts processes through the C shim; call it only from the supervisor's own thread.
enum ChildProcess {
    /// `cpu`: the one CPU the process and every thread it makes run on (nil: the kernel's choice).
    static func spawn(
        path: String, arguments: [String], environment: [String: String], logPath: String, cpu: Int? = nil
    ) throws(SpawnFailure) -> pid_t {
        // ETXTBSY is transient when another thread's fork briefly holds a writable fd to the file.
        var attempt = 0
        while true {
            do {
                return try spawnOnce(path: path, arguments: arguments, environment: environment, logPath: logPath, cpu: cpu)
            } catch where error.step == .exec && error.errno == ETXTBSY && attempt < 5 {
                attempt += 1
                usleep(UInt32(1000 << attempt))
            }
        }
    }

    private static func spawnOnce(
        path: String, arguments: [String], environment: [String: String], logPath: String, cpu: Int?
    ) throws(SpawnFailure) -> pid_t {
        let argv = CStringArray([path.split(separator: "/").last.map(String.init) ?? path] + arguments)
        let envp = CStringArray(environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" })
        var pid: pid_t = 0
        var stage: Int32 = 0
        let error = withExtendedLifetime((argv, envp)) {
            cflowhost_spawn(path, argv.pointers, envp.pointers, logPath, Int32(cpu ?? -1), &pid, &stage)
        }
        guard error == 0 else {
            throw SpawnFailure(step: SpawnFailure.Step(stage), errno: error, path: path, logPath: logPath)
        }
        return pid
    }

    /// Signals a process (or, with a negative pid, its process group); returns the errno or 0.
    static func signal(_ pid: pid_t, _ signal: Int32) -> Int32 {
        cflowhost_kill(pid, signal)
    }
}

extension SpawnFailure.Step {
    init(_ stage: Int32) {
        switch UInt32(stage) {
        case CFLOWHOST_STAGE_PIPE.rawValue: self = .pipe
        case CFLOWHOST_STAGE_OPEN_LOG.rawValue: self = .openLog
        case CFLOWHOST_STAGE_FORK.rawValue: self = .fork
        case CFLOWHOST_STAGE_CHILD_SETUP.rawValue: self = .childSetup
        default: self = .exec
        }
    }
}

/// NULL-terminated `char *[]` owned for the duration of one spawn.
private final class CStringArray {
    let pointers: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>
    private let count: Int

    init(_ strings: [String]) {
        count = strings.count
        pointers = .allocate(capacity: strings.count + 1)
        for (index, string) in strings.enumerated() {
            pointers[index] = strdup(string)
        }
        pointers[strings.count] = nil
    }

    deinit {
        for index in 0..<count { free(pointers[index]) }
        pointers.deallocate()
    }
}
