import FlowbusEnvironment
import Foundation
import Glibc
import Testing

/// `flowbus down` asks whether the host still runs. A host started by `flowbus demo` that has
/// exited but is not reaped yet is a zombie: `kill(pid, 0)` still succeeds on it, and `down`
/// waited 20 s for it, then said it had to kill it (issue 17). A zombie is not alive.
@Suite("Process liveness")
struct ProcessLivenessTests {
    @Test func anExitedChildNotYetReapedIsNotAlive() async throws {
        var pid: pid_t = 0
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/true"), nil]
        defer { for pointer in argv { free(pointer) } }
        try #require(posix_spawn(&pid, "/bin/true", nil, nil, argv, environ) == 0)
        var zombie = false
        for _ in 0..<250 where !zombie {
            zombie = isZombie(pid: pid)
            if !zombie { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(zombie, "the child never showed as exited and unreaped")
        #expect(kill(pid, 0) == 0, "a zombie still answers kill(pid, 0): the check this replaces")
        #expect(!isAlive(pid: pid))
        var status: Int32 = 0
        #expect(waitpid(pid, &status, 0) == pid)
        #expect(!isAlive(pid: pid))
        #expect(isAlive(pid: getpid()) && !isZombie(pid: getpid()))
    }
}
