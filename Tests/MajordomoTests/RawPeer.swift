import Majordomo
import ZeroMQ

/// A bare DEALER speaking frames directly, to play a misbehaving or minimal peer.
/// Create and use it on one thread.
final class RawPeer {
    let socket: ZMQSocket

    init(context: ZMQContext, endpoint: String, routingID: String? = nil) throws {
        socket = try ZMQSocket(context: context, type: .dealer, linger: .zero)
        if let routingID { try socket.setRoutingID(Array(routingID.utf8)) }
        try socket.connect(endpoint)
    }

    func send(_ frames: [Frame]) throws {
        try socket.send(frames.isEmpty ? [[]] : frames)
    }

    func send(_ command: MDPCommand) throws {
        try socket.send(command.frames)
    }

    /// The next message, or nil after `timeout`.
    func receive(timeout: Duration) throws -> [Frame]? {
        try socket.setReceiveTimeout(timeout)
        return try socket.receiveMessage()
    }

    /// The next message that is not a HEARTBEAT, decoded, or nil after `timeout`.
    func receiveCommand(timeout: Duration) throws -> MDPCommand? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            guard let frames = try receive(timeout: deadline - ContinuousClock.now) else { return nil }
            let command = try MDPCommand.decode(frames, direction: .fromBroker)
            if command != .heartbeat { return command }
        }
        return nil
    }
}
