import CZeroMQ

/// A libzmq context: the I/O threads every socket of a process shares.
///
/// `@unchecked Sendable` is true here: libzmq documents `zmq_ctx_*` and socket
/// creation on a context as thread-safe; sockets themselves are not, and are not Sendable.
public final class ZMQContext: @unchecked Sendable {
    let handle: UnsafeMutableRawPointer

    public init(ioThreads: Int = 1) throws(ZMQError) {
        guard let handle = zmq_ctx_new() else { throw ZMQError.last("zmq_ctx_new") }
        self.handle = handle
        if ioThreads != 1 {
            guard zmq_ctx_set(handle, ZMQ_IO_THREADS, Int32(ioThreads)) == 0 else {
                let error = ZMQError.last("zmq_ctx_set(ZMQ_IO_THREADS)")
                zmq_ctx_term(handle)
                throw error
            }
        }
    }

    /// Makes every blocking call on this context's sockets return `.terminated`,
    /// so threads that own sockets can notice and close them.
    public func shutdown() {
        zmq_ctx_shutdown(handle)
    }

    deinit {
        // Every socket holds a strong reference to its context, so by now all are closed
        // and zmq_ctx_term cannot block on a forgotten socket.
        while zmq_ctx_term(handle) != 0 && zmq_errno() == EINTR {}
    }
}

/// Facts about the linked libzmq.
public enum ZeroMQLibrary {
    /// The version of the libzmq this process linked, e.g. (4, 3, 4).
    public static var version: (major: Int, minor: Int, patch: Int) {
        var major: Int32 = 0, minor: Int32 = 0, patch: Int32 = 0
        zmq_version(&major, &minor, &patch)
        return (Int(major), Int(minor), Int(patch))
    }

    /// Whether libzmq was built with a capability such as "curve" or "ipc".
    public static func has(_ capability: String) -> Bool {
        zmq_has(capability) != 0
    }
}
