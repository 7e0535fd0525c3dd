import CZeroMQ
#if canImport(Glibc)
import Glibc
#endif

/// Which readiness a poll item waits for.
public struct PollEvents: OptionSet, Sendable {
    public let rawValue: Int16
    public init(rawValue: Int16) { self.rawValue = rawValue }
    public static let readable = PollEvents(rawValue: Int16(ZMQ_POLLIN))
    public static let writable = PollEvents(rawValue: Int16(ZMQ_POLLOUT))
}

/// `zmq_poll` over a fixed set of sockets and file descriptors, reused loop after loop.
/// Owned by the thread that owns its sockets.
public final class ZMQPoller {
    private var items: [zmq_pollitem_t] = []
    private var sockets: [ZMQSocket?] = []

    public init() {}

    /// Adds a socket; returns its index for `isReadable(_:)`.
    @discardableResult
    public func add(_ socket: ZMQSocket, events: PollEvents = .readable) -> Int {
        items.append(zmq_pollitem_t(socket: socket.handle, fd: -1, events: events.rawValue, revents: 0))
        sockets.append(socket)
        return items.count - 1
    }

    /// Adds a plain file descriptor (a pipe, a signal fd); returns its index.
    @discardableResult
    public func add(fileDescriptor: Int32, events: PollEvents = .readable) -> Int {
        items.append(zmq_pollitem_t(socket: nil, fd: fileDescriptor, events: events.rawValue, revents: 0))
        sockets.append(nil)
        return items.count - 1
    }

    /// Changes what an item waits for (for example, writability only while a queue is full).
    public func setEvents(_ events: PollEvents, at index: Int) {
        items[index].events = events.rawValue
    }

    /// Waits until an item is ready or the timeout passes (nil waits forever).
    /// Returns how many items are ready; 0 on timeout or on EINTR.
    @discardableResult
    public func poll(timeout: Duration?) throws(ZMQError) -> Int {
        // zmq_poll counts whole milliseconds: round a partial one up, so that a loop waiting for a
        // deadline less than 1 ms away sleeps once instead of spinning through zero timeouts.
        let milliseconds = timeout.map { $0 <= .zero ? 0 : Int(($0 + .nanoseconds(999_999)).milliseconds) } ?? -1
        let count = items.withUnsafeMutableBufferPointer { zmq_poll($0.baseAddress, Int32($0.count), milliseconds) }
        if count < 0 {
            let error = ZMQError.last("zmq_poll")
            if error.code == .interrupted { return 0 }
            throw error
        }
        return Int(count)
    }

    /// Busy-polls for up to `duration`: a non-blocking `zmq_poll` in a loop, yielding the CPU to
    /// any other runnable thread between tries. True as soon as an item is ready (`isReadable`
    /// then tells which); false when the time ran out, and the caller may block in `poll(timeout:)`.
    /// A message that arrives while spinning is seen at once, without waking a sleeping thread
    /// (tens of µs on a virtual machine); the price is CPU for at most `duration`.
    public func spin(upTo duration: Duration) throws(ZMQError) -> Bool {
        let clock = ContinuousClock()
        let end = clock.now + duration
        repeat {
            if try poll(timeout: .zero) > 0 { return true }
            sched_yield()
        } while clock.now < end
        return false
    }

    public func isReadable(_ index: Int) -> Bool {
        items[index].revents & Int16(ZMQ_POLLIN) != 0
    }

    public func isWritable(_ index: Int) -> Bool {
        items[index].revents & Int16(ZMQ_POLLOUT) != 0
    }
}

@available(*, unavailable)
extension ZMQPoller: Sendable {}
