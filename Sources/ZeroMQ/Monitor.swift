import CZeroMQ
import Glibc
import Synchronization

/// A socket's transport event, as `zmq_socket_monitor` reports it.
public struct SocketEvent: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let connected = SocketEvent(rawValue: UInt16(ZMQ_EVENT_CONNECTED))
    public static let connectDelayed = SocketEvent(rawValue: UInt16(ZMQ_EVENT_CONNECT_DELAYED))
    public static let connectRetried = SocketEvent(rawValue: UInt16(ZMQ_EVENT_CONNECT_RETRIED))
    public static let listening = SocketEvent(rawValue: UInt16(ZMQ_EVENT_LISTENING))
    public static let bindFailed = SocketEvent(rawValue: UInt16(ZMQ_EVENT_BIND_FAILED))
    public static let accepted = SocketEvent(rawValue: UInt16(ZMQ_EVENT_ACCEPTED))
    public static let acceptFailed = SocketEvent(rawValue: UInt16(ZMQ_EVENT_ACCEPT_FAILED))
    public static let closed = SocketEvent(rawValue: UInt16(ZMQ_EVENT_CLOSED))
    public static let closeFailed = SocketEvent(rawValue: UInt16(ZMQ_EVENT_CLOSE_FAILED))
    public static let disconnected = SocketEvent(rawValue: UInt16(ZMQ_EVENT_DISCONNECTED))
    public static let monitorStopped = SocketEvent(rawValue: UInt16(ZMQ_EVENT_MONITOR_STOPPED))
    public static let handshakeFailedNoDetail = SocketEvent(rawValue: UInt16(ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL))
    public static let handshakeSucceeded = SocketEvent(rawValue: UInt16(ZMQ_EVENT_HANDSHAKE_SUCCEEDED))
    public static let handshakeFailedProtocol = SocketEvent(rawValue: UInt16(ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL))
    public static let handshakeFailedAuth = SocketEvent(rawValue: UInt16(ZMQ_EVENT_HANDSHAKE_FAILED_AUTH))
    public static let all = SocketEvent(rawValue: 0xFFFF)

    public var description: String {
        let names: [(SocketEvent, String)] = [
            (.connected, "connected"), (.connectDelayed, "connect-delayed"), (.connectRetried, "connect-retried"),
            (.listening, "listening"), (.bindFailed, "bind-failed"), (.accepted, "accepted"),
            (.acceptFailed, "accept-failed"), (.closed, "closed"), (.closeFailed, "close-failed"),
            (.disconnected, "disconnected"), (.monitorStopped, "monitor-stopped"),
            (.handshakeFailedNoDetail, "handshake-failed"), (.handshakeSucceeded, "handshake-succeeded"),
            (.handshakeFailedProtocol, "handshake-failed-protocol"), (.handshakeFailedAuth, "handshake-failed-auth"),
        ]
        let matching = names.filter { contains($0.0) }.map(\.1)
        return matching.isEmpty ? "event(\(rawValue))" : matching.joined(separator: "|")
    }
}

/// One monitor report: the event, its value (an fd, errno or interval), and the endpoint.
public struct MonitorEvent: Sendable, CustomStringConvertible {
    public let event: SocketEvent
    public let value: UInt32
    public let endpoint: String
    public var description: String { "\(event) \(endpoint) (\(value))" }

    /// Reads one message of the monitor's PAIR socket (event header, endpoint); nil if it is not one.
    public init?(frames: [Frame]) {
        guard frames.count >= 2, frames[0].count >= 6 else { return nil }
        let header = frames[0]
        event = SocketEvent(rawValue: UInt16(header[0]) | UInt16(header[1]) << 8)
        value = UInt32(header[2]) | UInt32(header[3]) << 8 | UInt32(header[4]) << 16 | UInt32(header[5]) << 24
        endpoint = String(decoding: frames[1], as: UTF8.self)
    }
}

/// Receives the transport events of one socket through the inproc PAIR libzmq publishes them on.
/// Owned by one thread, like the socket it reads.
public final class SocketMonitor {
    public let socket: ZMQSocket

    private static let counter = Counter()

    /// Starts monitoring `target` for `events`. Call on the thread that owns `target`.
    public init(_ target: ZMQSocket, events: SocketEvent = .all) throws(ZMQError) {
        let endpoint = "inproc://flowbus-monitor-\(getpid())-\(Self.counter.next())"
        guard zmq_socket_monitor(target.handle, endpoint, Int32(events.rawValue)) == 0 else {
            throw ZMQError.last("zmq_socket_monitor(\(endpoint))")
        }
        socket = try ZMQSocket(context: target.context, type: .pair, linger: .zero)
        try socket.connect(endpoint)
    }

    /// The next event, or nil if none arrives within `timeout` (nil waits forever).
    public func nextEvent(timeout: Duration?) throws(ZMQError) -> MonitorEvent? {
        try socket.setReceiveTimeout(timeout)
        guard let frames = try socket.receiveMessage() else { return nil }
        return MonitorEvent(frames: frames)
    }
}

@available(*, unavailable)
extension SocketMonitor: Sendable {}

/// A process-wide counter for unique inproc names.
final class Counter: Sendable {
    private let value = Mutex<Int>(0)
    func next() -> Int { value.withLock { $0 += 1; return $0 } }
}
