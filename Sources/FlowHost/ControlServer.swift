import Foundation
import Logging
import MessagePath
import Synchronization
import ZeroMQ

/// The host's control socket: a ROUTER on its own thread answering JSON requests.
final class ControlServer: Sendable {
    typealias Handler = @Sendable (ControlRequest) -> Data

    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    /// Wakes the serving thread for `stop()`: it sleeps until a request or this, not waking to
    /// look at `stopping` (it woke 20 times a second for that, idle).
    private let wake: WakeSignal

    private init(wake: WakeSignal) {
        self.wake = wake
    }

    /// Binds `endpoint` and answers each request with `handler` until `stop()`.
    static func start(context: ZMQContext, endpoint: String, logger: Logger, handler: @escaping Handler) throws -> ControlServer {
        let server = ControlServer(wake: try WakeSignal())
        let bound = DispatchSemaphore(value: 0)
        let bindError = Mutex<(any Error)?>(nil)
        let thread = Thread {
            ThreadName.set("fb-control")
            defer { server.finished.signal() }
            let socket: ZMQSocket
            do {
                socket = try ZMQSocket(context: context, type: .router, linger: .zero)
                try socket.setMaximumMessageSize(1 << 20)
                try socket.bind(endpoint)
            } catch {
                bindError.withLock { $0 = error }
                bound.signal()
                return
            }
            bound.signal()
            server.serve(socket, logger: logger, handler: handler)
        }
        thread.name = "flowbus-control"
        thread.start()
        bound.wait()
        if let error = bindError.withLock({ $0 }) { throw error }
        return server
    }

    func stop() {
        stopping.store(true, ordering: .relaxed)
        wake.wake()
        finished.wait()
    }

    private func serve(_ socket: ZMQSocket, logger: Logger, handler: Handler) {
        let poller = ZMQPoller()
        poller.add(socket)
        poller.add(fileDescriptor: wake.fileDescriptor)
        while !stopping.load(ordering: .relaxed) {
            do {
                guard try poller.poll(timeout: nil) > 0 else { continue }
                while let frames = try socket.receiveMessage(dontWait: true) {
                    // A REQ peer sends [identity, empty, body]; a DEALER may omit the delimiter.
                    guard frames.count >= 2, let body = frames.last else { continue }
                    let envelope = Array(frames.dropLast())
                    let reply: Data
                    if let request = try? JSONDecoder.flowbus.decode(ControlRequest.self, from: Data(body)) {
                        reply = handler(request)
                    } else {
                        let text = "the control request is not JSON of the form {\"command\": \"status\"}; use the flowbus CLI"
                        reply = (try? JSONEncoder.flowbus.encode(ControlReply<Empty>(ok: false, error: text))) ?? Data()
                        logger.warning("malformed control request", metadata: ["flowbus.control.bytes": "\(body.count)"])
                    }
                    try socket.send(prefix: envelope, [Array(reply)])
                }
            } catch {
                if error.code == .terminated { return }
                logger.error("control socket error", metadata: ["flowbus.error": "\(error)"])
            }
        }
    }
}
