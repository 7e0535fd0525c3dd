import Foundation
import Synchronization

/// One ZAP request (27/ZAP): who is connecting, how, and with what credentials.
public struct ZAPRequest: Sendable {
    /// `NULL`, `PLAIN` or `CURVE`.
    public var mechanism: String
    /// The peer's address as libzmq gives it: an IP for tcp, `localhost:<uid>:<gid>:<pid>` for
    /// ipc (the kernel's peer credentials, which no peer can forge).
    public var address: String
    public var domain: String
    /// The peer's CURVE public key, when the mechanism is CURVE.
    public var curveKey: CurveKey?

    /// The uid and pid of an ipc peer, read from `address`; nil for any other transport.
    public var ipcPeer: (uid: UInt32, pid: Int32)? {
        let parts = address.split(separator: ":")
        guard parts.count == 4, parts[0] == "localhost", let uid = UInt32(parts[1]), let pid = Int32(parts[3]) else { return nil }
        return (uid, pid)
    }

    public init(mechanism: String, address: String, domain: String, curveKey: CurveKey?) {
        self.mechanism = mechanism
        self.address = address
        self.domain = domain
        self.curveKey = curveKey
    }
}

/// What the handler answers: admit with a User-Id (every message of the connection carries it,
/// `ReceivedMessage.userID`), or deny with a reason.
public enum ZAPDecision: Sendable, Equatable {
    case admit(userID: String)
    case deny(reason: String)
}

/// A ZAP (27/ZAP) handler: decides each handshake on sockets that have a ZAP domain.
///
/// libzmq asks the handler bound at `inproc://zeromq.zap.01` of the same context for every
/// handshake on a socket with a ZAP domain, whatever the mechanism (NULL included). The handler
/// runs on its own thread; its socket never leaves that thread.
public final class ZAPAuthenticator: Sendable {
    public struct Counts: Sendable, Equatable {
        public var admitted = 0
        public var denied = 0
    }

    private let context: ZMQContext
    private let decide: @Sendable (ZAPRequest) -> ZAPDecision
    private let stopping = Atomic<Bool>(false)
    private let counts = Mutex(Counts())
    private let finished = Mutex<Bool>(false)

    /// A handler that asks `decide` about each connection.
    public init(context: ZMQContext, decide: @escaping @Sendable (ZAPRequest) -> ZAPDecision) {
        self.context = context
        self.decide = decide
    }

    /// A handler that admits only CURVE clients whose public key is on the allow-list.
    public convenience init(
        context: ZMQContext,
        allowedClientKeys: Set<CurveKey>,
        onDecision: (@Sendable (_ key: CurveKey?, _ admitted: Bool, _ address: String) -> Void)? = nil
    ) {
        self.init(context: context) { request in
            guard request.mechanism == "CURVE", let key = request.curveKey else {
                onDecision?(nil, false, request.address)
                return .deny(reason: "only CURVE clients with an allowed key may connect")
            }
            let admitted = allowedClientKeys.contains(key)
            onDecision?(key, admitted, request.address)
            return admitted ? .admit(userID: key.z85) : .deny(reason: "client key not on the allow-list")
        }
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
        func reply(_ code: String, _ text: String, userID: String = "") -> [Frame] {
            [Array("1.0".utf8), requestID, Array(code.utf8), Array(text.utf8), Array(userID.utf8), []]
        }
        guard request.count >= 6, request[0] == Array("1.0".utf8) else {
            counts.withLock { $0.denied += 1 }
            return reply("500", "malformed ZAP request")
        }
        let mechanism = String(decoding: request[5], as: UTF8.self)
        let key = mechanism == "CURVE" && request.count >= 7 ? try? CurveKey(bytes: request[6]) : nil
        let decision = decide(ZAPRequest(
            mechanism: mechanism, address: String(decoding: request[3], as: UTF8.self),
            domain: String(decoding: request[2], as: UTF8.self), curveKey: key))
        switch decision {
        case .admit(let userID):
            counts.withLock { $0.admitted += 1 }
            return reply("200", "OK", userID: userID)
        case .deny(let reason):
            counts.withLock { $0.denied += 1 }
            return reply("400", reason)
        }
    }
}
