import Glibc

/// A pipe other threads write to wake the broker's poll; the broker's poller watches its read end.
/// Safe from any thread: a one-byte pipe write is atomic, and both ends are non-blocking.
final class WakeSignal: Sendable {
    let fileDescriptor: Int32
    private let writeEnd: Int32

    init() throws(BrokerStartError) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            throw .system("cannot create the broker's wake-up pipe (errno \(errno)); the process may be out of file descriptors")
        }
        for end in ends {
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
        fileDescriptor = ends[0]
        writeEnd = ends[1]
    }

    func wake() {
        var byte: UInt8 = 1
        // A full pipe already holds a wake-up; EAGAIN is fine.
        _ = write(writeEnd, &byte, 1)
    }

    /// Clears pending wake-ups.
    func drain() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(fileDescriptor, &buffer, buffer.count) > 0 {}
    }

    deinit {
        close(fileDescriptor)
        close(writeEnd)
    }
}
