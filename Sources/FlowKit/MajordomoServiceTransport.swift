import FlowProtocol
import Foundation
import Majordomo
import Synchronization
import ZeroMQ

/// Calls an app service over 7/MDP: a ServiceCall envelope out, a ServiceReply envelope back.
/// Safe to use from several threads at once: each call borrows an MDP client of its own (made
/// with `makeClient` when every one is busy) and gives it back after.
public final class MajordomoServiceTransport: ServiceTransport, @unchecked Sendable {
    let writer: String
    /// Makes another client when every one is busy; nil: calls that overlap wait for the one there is.
    private let makeClient: (() throws(MajordomoClientError) -> MajordomoClient)?
    private let returned = NSCondition()
    /// The clients not in use now (an MDP client is used by one thread at a time).
    private var idle: [MajordomoClient]
    /// Every client made, busy or idle.
    public private(set) var clientsMade = 1
    /// Every call carries its own idempotency key, the same in each of the client's retries, so
    /// a retry after a slow first try is answered from the service's memory, not applied twice.
    /// Inside an action the key comes from the action's (`ServiceCallKeys`), so a run of the
    /// action again after a restart makes the same calls with the same keys.
    private let keyPrefix = String(UUID().uuidString.prefix(8)).lowercased()
    private let calls = Atomic<Int>(0)

    /// A transport over `client`; with `makeClient`, calls that overlap get clients of their own.
    public init(client: MajordomoClient, writer: String, makeClient: (() throws(MajordomoClientError) -> MajordomoClient)? = nil) {
        self.writer = writer
        self.makeClient = makeClient
        idle = [client]
    }

    private func borrow() throws(MajordomoClientError) -> MajordomoClient {
        returned.lock()
        defer { returned.unlock() }
        while idle.isEmpty {
            if let makeClient {
                let client = try makeClient()
                clientsMade += 1
                return client
            }
            returned.wait()
        }
        return idle.removeLast()
    }

    private func giveBack(_ client: MajordomoClient) {
        returned.lock()
        idle.append(client)
        returned.signal()
        returned.unlock()
    }

    public func call(service: String, _ call: Flowbus_V1_ServiceCall) throws(ServiceTransportError) -> Flowbus_V1_ServiceReply {
        let body: [UInt8]
        let key: String
        do {
            let number = calls.add(1, ordering: .relaxed).newValue
            key = ServiceCallKeys.next(service: service, method: call.method, args: call.args) { "\(writer)/\(keyPrefix)/\(number)" }
            // The session an action's calls are for goes with them: the host's trace shows them in its timeline.
            body = try Envelope.wrapping(call, session: ServiceCallKeys.session, idempotencyKey: key, writer: writer).encoded()
        } catch {
            throw ServiceTransportError(service: service, reason: "the call could not be encoded: \(error)")
        }
        let reply: [Frame]
        do {
            let client = try borrow()
            defer { giveBack(client) }
            // A late answer to an earlier call (a duplicate's, a slow try's) is not this call's.
            reply = try client.request(service: service, body: [body]) { Envelope.reply($0, answers: key).answers }
        } catch {
            throw ServiceTransportError(service: service, reason: "\(error)")
        }
        guard reply.count == 1, let frame = reply.first else {
            throw ServiceTransportError(service: service, reason: "the reply had \(reply.count) body frames instead of one envelope")
        }
        do {
            let envelope = try Envelope.decodeChecked(frame)
            if envelope.holds(WireError.self) {
                let error = try envelope.unwrap(WireError.self)
                throw ServiceTransportError(service: service, reason: "\(error.message) (\(error.hint))")
            }
            return try envelope.unwrap(Flowbus_V1_ServiceReply.self)
        } catch let error as ServiceTransportError {
            throw error
        } catch {
            throw ServiceTransportError(service: service, reason: "the reply was not a ServiceReply envelope: \(error)")
        }
    }
}
