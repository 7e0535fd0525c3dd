import Foundation
import Synchronization

/// A ZAP (27/ZAP) handler that admits CURVE clients whose public key is on an allow-list.
///
/// libzmq asks the handler bound at `inproc://zeromq.zap.01` of the same context for every
/// handshake on a socket with a ZAP domain. The handler runs on its own thread; its socket
/// never leaves that thread.
public final class ZAPAuthenticator: Sendable {
    public struct Counts: Sendable, Equatable {
        public var admitted = 0
        public var denied = 0
    }

    private let context: ZMQContext
    private let allowed: Set<CurveKey>
    private let stopping = Atomic<Bool>(false)
    private let counts = Mutex(Counts())
    private let finished = Mutex<Bool>(false)
    private let onDecision: (@Sendable (_ key: CurveKey?, _ admitted: Bool, _ address: String) -> Void)?

    public init(
        context: ZMQContext,
        allowedClientKeys: Set<CurveKey>,
        onDecision: (@Sendable (_ key: CurveKey?, _ admitted: Bool, _ address: String) -> Void)? = nil
    ) {
        self.context = context
        self.allowed = allowedClientKeys
        self.onDecision = onDecision
    }

    public var decisions: Counts { counts.withLock { $0 } }

    /// Binds the ZAP endpoint and starts answering. Call before binding CURVE sockets.
    public func start() throws(ZMQError) {
        let ready = Mutex<Result<Void, ZMQError>?>(nil)
        let semaphore = DispatchSemaphore(value: 0)
        let thread = Thread { [self] in
            do {
                let socket = try ZMQSocket(context: context, type: .rep, linger: .zero)
                try socket.bind("inproc://zeromq.zap.01")
                ready.withLock { $0 = .success(()) }
                semaphore.signal()
                serve(socket)
            } catch let error as ZMQError {
                ready.withLock { $0 = .failure(error) }
                semaphore.signal()
            } catch {}
            finished.withLock { $0 = true }
        }
        thread.name = "flowbus-zap"
        thread.start()
        semaphore.wait()
        if case .failure(let error) = ready.withLock({ $0 }) { throw error }
    }

    public func stop() {
        stopping.store(true, ordering: .relaxed)
    }

    private func serve(_ socket: ZMQSocket) {
        let poller = ZMQPoller()
        poller.add(socket)
        while !stopping.load(ordering: .relaxed) {
            do {
                guard try poller.poll(timeout: .milliseconds(100)) > 0,
                      let request = try socket.receiveMessage(dontWait: true) else { continue }
                try socket.send(answer(request))
            } catch {
                if error.code == .terminated { return }
            }
        }
    }

    /// Frames: version, request id, domain, address, routing id, mechanism, credentials...
    private func answer(_ request: [Frame]) -> [Frame] {
        let requestID = request.count > 1 ? request[1] : []
        func reply(_ code: String, _ text: String) -> [Frame] {
            [Array("1.0".utf8), requestID, Array(code.utf8), Array(text.utf8), [], []]
        }
        guard request.count >= 6, request[0] == Array("1.0".utf8) else {
            return reply("500", "malformed ZAP request")
        }
        let address = String(decoding: request[3], as: UTF8.self)
        let mechanism = String(decoding: request[5], as: UTF8.self)
        guard mechanism == "CURVE", request.count >= 7, let key = try? CurveKey(bytes: request[6]) else {
            counts.withLock { $0.denied += 1 }
            onDecision?(nil, false, address)
            return reply("400", "only CURVE clients with an allowed key may connect")
        }
        let admitted = allowed.contains(key)
        counts.withLock { if admitted { $0.admitted += 1 } else { $0.denied += 1 } }
        onDecision?(key, admitted, address)
        return admitted ? reply("200", "OK") : reply("400", "client key not on the allow-list")
    }
}
