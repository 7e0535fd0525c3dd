import Glibc

/// A non-blocking pipe other threads write to wake a loop's poll. Safe from any thread:
/// small pipe writes and reads are atomic in the kernel.
final class WakeSignal: Sendable {
    let fileDescriptor: Int32
    private let writeDescriptor: Int32

    init() throws(CloneStartError) {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else {
            throw .system("pipe failed (errno \(errno)); the process may be out of file descriptors")
        }
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        fileDescriptor = fds[0]
        writeDescriptor = fds[1]
    }

    func wake() {
        var one: UInt8 = 1
        // A full pipe already holds a wake-up; the loop drains it all.
        _ = write(writeDescriptor, &one, 1)
    }

    /// Clears pending wake-ups.
    func drain() {
        var buffer = [UInt8](repeating: 0, count: 256)
        while read(fileDescriptor, &buffer, buffer.count) > 0 {}
    }

    deinit {
        close(fileDescriptor)
        close(writeDescriptor)
    }
}
