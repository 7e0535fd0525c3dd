import Foundation
import ZeroMQ

/// Talks to a running host's control socket: one request, one JSON reply, with a timeout.
public struct ControlClient: Sendable {
    public let runDirectory: RunDirectory
    public let timeout: Duration

    public init(runDirectory: RunDirectory, timeout: Duration = .seconds(3)) {
        self.runDirectory = runDirectory
        self.timeout = timeout
    }

    /// Sends the request and decodes the reply's body; throws the host's own error text on refusal.
    public func send<Body: Codable & Sendable>(_ request: ControlRequest, expecting: Body.Type = Body.self) throws -> Body {
        guard let descriptor = try runDirectory.liveHost() else {
            throw HostError.notRunning(runDirectory: runDirectory.path)
        }
        let raw = try exchange(request, endpoint: descriptor.endpoints.control)
        let reply = try JSONDecoder.flowbus.decode(ControlReply<Body>.self, from: raw)
        guard reply.ok, let body = reply.body else {
            throw HostError.rejected(command: request.command.rawValue, reason: reply.error ?? "no reason given")
        }
        return body
    }

    /// The raw JSON reply, for `--json` output that passes the host's answer through.
    public func exchange(_ request: ControlRequest, endpoint: String) throws -> Data {
        let context = try ZMQContext()
        let socket = try ZMQSocket(context: context, type: .req, linger: .zero)
        try socket.connect(endpoint)
        try socket.setReceiveTimeout(timeout)
        try socket.send(Array(try JSONEncoder.flowbus.encode(request)))
        guard let reply = try socket.receiveMessage(), let body = reply.last else {
            throw HostError.noAnswer(endpoint: endpoint, timeout: timeout)
        }
        return Data(body)
    }
}
