import Glibc

/// A non-blocking pipe other threads write to wake a socket loop's `zmq_poll`; the loop's
/// poller watches `fileDescriptor`. Safe from any thread: small pipe writes and reads are
/// atomic in the kernel.
public final class WakeSignal: Sendable {
    public let fileDescriptor: Int32
    private let writeEnd: Int32

    public init() throws(WakeSignalError) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw WakeSignalError(errno: errno) }
        for end in ends {
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
        fileDescriptor = ends[0]
        writeEnd = ends[1]
    }

    public func wake() {
        var byte: UInt8 = 1
        // A full pipe already holds a wake-up; EAGAIN is fine.
        _ = write(writeEnd, &byte, 1)
    }

    /// Clears pending wake-ups.
    public func drain() {
        var buffer = [UInt8](repeating: 0, count: 256)
        while read(fileDescriptor, &buffer, buffer.count) > 0 {}
    }

    deinit {
        close(fileDescriptor)
        close(writeEnd)
    }
}

public struct WakeSignalError: Error, CustomStringConvertible {
    public let errno: Int32
    public var description: String {
        "cannot create a wake-up pipe (errno \(errno)); the process may be out of file descriptors: raise `ulimit -n`"
    }
}
