import Foundation
import Synchronization

/// SIGINT, SIGTERM and SIGHUP turned into a byte on a pipe, by a handler installed before
/// anything else starts: a signal that arrives during start-up is neither lost nor fatal,
/// it only asks the host to stop as soon as it can.
public enum StopSignals {
    public static let numbers: [Int32] = [SIGINT, SIGTERM, SIGHUP]

    /// The pipe's ends; set once by `install()`, read by the handler (async-signal-safe: one write).
    nonisolated(unsafe) private static var writeEnd: Int32 = -1
    nonisolated(unsafe) private static var readEnd: Int32 = -1
    private static let installed = Mutex<Bool>(false)

    /// Installs the handlers. Call first thing in a command that runs a host. Children get the
    /// default dispositions back before exec (the supervisor's spawn shim resets them).
    public static func install() {
        installed.withLock { done in
            guard !done else { return }
            var ends: [Int32] = [-1, -1]
            guard pipe(&ends) == 0 else { return }
            for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
            _ = fcntl(ends[1], F_SETFL, fcntl(ends[1], F_GETFL) | O_NONBLOCK)
            readEnd = ends[0]
            writeEnd = ends[1]
            for number in numbers {
                var action = sigaction()
                action.__sigaction_handler.sa_handler = { number in
                    var byte = UInt8(truncatingIfNeeded: number)
                    _ = write(StopSignals.writeEnd, &byte, 1)
                }
                sigemptyset(&action.sa_mask)
                action.sa_flags = SA_RESTART
                sigaction(number, &action, nil)
            }
            var unblocked = sigset_t()
            sigemptyset(&unblocked)
            for number in numbers { sigaddset(&unblocked, number) }
            // A caller may have started us with these blocked (test runners do); we want them.
            pthread_sigmask(SIG_UNBLOCK, &unblocked, nil)
            done = true
        }
    }

    /// Calls `handler` on a thread of its own for each signal received, including one that
    /// arrived before this call.
    public static func onSignal(_ handler: @escaping @Sendable (Int32) -> Void) {
        install()
        let descriptor = readEnd
        let thread = Thread {
            var byte: UInt8 = 0
            while true {
                let count = read(descriptor, &byte, 1)
                if count == 1 {
                    handler(Int32(byte))
                } else if count < 0 && errno == EINTR {
                    continue
                } else {
                    return
                }
            }
        }
        thread.name = "flowbus-signals"
        thread.start()
    }
}
