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

/// Waits on a fixed set of sockets and file descriptors, reused loop after loop, as `zmq_poll`
/// does but with fewer system calls. Owned by the thread that owns its sockets.
///
/// `zmq_poll` asks every socket for its readiness (`ZMQ_EVENTS`) before it sleeps and again after
/// every wake-up, whichever descriptor woke it. Each ask is two system calls when nothing is
/// pending (`getpid`, then `poll` on the socket's mailbox), so a loop over five items paid about
/// twenty per wake-up, most of a Clone agent's or the broker's system calls. This poller asks a
/// socket before sleeping only when something was done on it since it was last found with nothing
/// to read (`ZMQSocket.drained`), and after a wake-up only the sockets whose descriptor woke it.
public final class ZMQPoller {
    /// What each item waits for and what the last poll found (`ZMQ_POLLIN`, `ZMQ_POLLOUT`, and
    /// `ZMQ_POLLERR` for a descriptor), in `zmq_poll`'s terms.
    private struct Item {
        var events: Int16
        var revents: Int16 = 0
    }

    private var items: [Item] = []
    private var sockets: [ZMQSocket?] = []
    /// What `poll(2)` waits on: each socket's `ZMQ_FD` (readable when libzmq queued it a
    /// command), each plain descriptor as given.
    private var descriptors: [pollfd] = []
    /// How many sockets were asked for their readiness (`ZMQ_EVENTS`), for tests and profiles.
    public private(set) var readinessChecks = 0
    /// How many times `poll(timeout:)` was called, for tests and profiles.
    public private(set) var polls = 0
    /// Held by the owning thread, which the poll lets go of while it sleeps (`WaitGate`); nil:
    /// only the owner ever uses the sockets.
    public var gate: WaitGate?

    public init() {}

    /// Adds a socket; returns its index for `isReadable(_:)`.
    @discardableResult
    public func add(_ socket: ZMQSocket, events: PollEvents = .readable) -> Int {
        // Fails only once the context is terminated; that socket is then asked on every poll,
        // which reports the termination.
        let descriptor = (try? socket.mailboxDescriptor()) ?? -1
        items.append(Item(events: events.rawValue))
        sockets.append(socket)
        descriptors.append(pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0))
        return items.count - 1
    }

    /// Adds a plain file descriptor (a pipe, a signal fd); returns its index.
    @discardableResult
    public func add(fileDescriptor: Int32, events: PollEvents = .readable) -> Int {
        items.append(Item(events: events.rawValue))
        sockets.append(nil)
        descriptors.append(pollfd(fd: fileDescriptor, events: Self.pollFlags(events), revents: 0))
        return items.count - 1
    }

    /// Changes what an item waits for (for example, writability only while a queue is full).
    public func setEvents(_ events: PollEvents, at index: Int) {
        items[index].events = events.rawValue
        // A socket's descriptor only ever says "commands came": it is waited on for POLLIN.
        guard sockets[index] == nil else { return }
        descriptors[index].events = Self.pollFlags(events)
    }

    /// `poll(2)`'s flags for a plain descriptor waited on for `events`.
    private static func pollFlags(_ events: PollEvents) -> Int16 {
        var flags: Int16 = 0
        if events.contains(.readable) { flags |= Int16(POLLIN) }
        if events.contains(.writable) { flags |= Int16(POLLOUT) }
        return flags
    }

    /// Waits until an item is ready or the timeout passes (nil waits forever).
    /// Returns how many items are ready; 0 on timeout or on EINTR.
    @discardableResult
    public func poll(timeout: Duration?) throws(ZMQError) -> Int {
        try poll(timeoutNanoseconds: timeout.map(Self.nanoseconds))
    }

    /// `duration` in whole nanoseconds: 0 when negative, the most there are when too long.
    private static func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0, attoseconds >= 0 else { return 0 }
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        let (total, carry) = whole.addingReportingOverflow(UInt64(attoseconds / 1_000_000_000))
        return overflow || carry ? .max : total
    }

    /// The same, the timeout in nanoseconds: a loop that works out its deadlines in nanoseconds
    /// (a Clone agent, once a wake-up) pays no `Duration` arithmetic here, whose 128-bit products
    /// and quotients cost some hundreds of instructions a wait.
    @discardableResult
    public func poll(timeoutNanoseconds: UInt64?) throws(ZMQError) -> Int {
        polls += 1
        // Whole milliseconds, as zmq_poll counts them: a partial one is rounded up, so that a loop
        // waiting for a deadline less than 1 ms away sleeps once instead of spinning through zero
        // timeouts. At most poll(2)'s longest wait, some 24 days.
        var wait = timeoutNanoseconds.map(Self.waitMilliseconds) ?? -1
        let deadline = wait > 0 ? Self.monotonicNanoseconds() &+ UInt64(wait) &* 1_000_000 : nil
        var ready = 0
        // A socket something was done on may already hold a message its descriptor will not
        // announce; so may one waited on for writability.
        for index in items.indices {
            items[index].revents = 0
            guard let socket = sockets[index] else { continue }
            if socket.drained && items[index].events & Int16(ZMQ_POLLOUT) == 0 && descriptors[index].fd >= 0 { continue }
            guard try ask(socket, at: index) else { return 0 }
            if items[index].revents != 0 { ready += 1 }
        }
        if ready > 0 { wait = 0 }
        while true {
            // Asleep, the gate is open: another thread may use the sockets meanwhile.
            let opened = wait != 0 ? gate : nil
            opened?.unlock()
            let count = descriptors.withUnsafeMutableBufferPointer { Glibc.poll($0.baseAddress, nfds_t($0.count), Int32(clamping: wait)) }
            let code = count < 0 ? errno : 0
            opened?.lock()
            if count < 0 {
                if code == EINTR { return 0 }
                throw ZMQError(code: ZMQErrorCode(rawValue: code), operation: "poll")
            }
            if count > 0 {
                for index in descriptors.indices where descriptors[index].revents != 0 {
                    if let socket = sockets[index] {
                        // Already found ready before the wait; otherwise its mailbox has commands.
                        if items[index].revents != 0 { continue }
                        guard try ask(socket, at: index) else { return 0 }
                    } else {
                        let happened = descriptors[index].revents
                        var revents: Int16 = 0
                        if happened & Int16(POLLIN) != 0 { revents |= Int16(ZMQ_POLLIN) }
                        if happened & Int16(POLLOUT) != 0 { revents |= Int16(ZMQ_POLLOUT) }
                        if happened & ~Int16(POLLIN | POLLOUT) != 0 { revents |= Int16(ZMQ_POLLERR) }
                        items[index].revents = revents
                    }
                    if items[index].revents != 0 { ready += 1 }
                }
            }
            if ready > 0 || wait == 0 { return ready }
            // Woken by commands that gave no socket anything to read: wait out the rest.
            if let deadline {
                let now = Self.monotonicNanoseconds()
                if deadline <= now { return 0 }
                let left = deadline - now
                wait = max(1, Self.waitMilliseconds(left))
            }
        }
    }

    /// Nanoseconds as poll(2)'s whole milliseconds, a part of one rounded up.
    private static func waitMilliseconds(_ nanoseconds: UInt64) -> Int {
        Int(min(nanoseconds / 1_000_000 &+ (nanoseconds % 1_000_000 == 0 ? 0 : 1), UInt64(Int32.max)))
    }

    private static func monotonicNanoseconds() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec)
    }

    /// Asks `socket` what it is ready for (`ZMQ_EVENTS`, which takes in its pending commands) and
    /// notes it in the item; false when the call was interrupted by a signal.
    private func ask(_ socket: ZMQSocket, at index: Int) throws(ZMQError) -> Bool {
        readinessChecks += 1
        guard let events = try socket.pendingEvents() else { return false }
        items[index].revents = events & (items[index].events | Int16(ZMQ_POLLERR))
        return true
    }

    /// Busy-polls for up to `duration`: a non-blocking `poll(timeout: .zero)` in a loop (one
    /// system call a try once the sockets are drained), yielding the CPU to any other runnable
    /// thread between tries. True as soon as an item is ready (`isReadable` then tells which);
    /// false when the time ran out, and the caller may block in `poll(timeout:)`.
    /// A message that arrives while spinning is seen at once, without waking a sleeping thread
    /// (tens of µs on a virtual machine); the price is CPU for at most `duration`.
    public func spin(upTo duration: Duration) throws(ZMQError) -> Bool {
        try spin(upToNanoseconds: Self.nanoseconds(duration))
    }

    /// The same, for a loop that keeps its times in nanoseconds (no `Duration` arithmetic a pass).
    public func spin(upToNanoseconds duration: UInt64) throws(ZMQError) -> Bool {
        let (end, overflow) = Self.monotonicNanoseconds().addingReportingOverflow(duration)
        let deadline = overflow ? UInt64.max : end
        repeat {
            if try poll(timeoutNanoseconds: 0) > 0 { return true }
            sched_yield()
        } while Self.monotonicNanoseconds() < deadline
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
