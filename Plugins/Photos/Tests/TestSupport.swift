import FlowKit
import FlowProtocol
import Foundation
import PhotosApp
import Synchronization

/// A wall clock the test moves by hand.
final class TestClock: Sendable {
    let current = Mutex(Date(timeIntervalSince1970: 1_800_000_000))

    var now: PhotosClock { { self.current.withLock { $0 } } }

    func advance(by seconds: TimeInterval) {
        current.withLock { $0 += seconds }
    }
}

/// The 6-digit code in a reset mail.
func code(in mail: Mail?) -> String? {
    guard let body = mail?.body, let range = body.range(of: #"\b[0-9]{6}\b"#, options: .regularExpression) else { return nil }
    return String(body[range])
}

/// A 6-digit code that is not `code`.
func otherCode(than code: String) -> String {
    code == "000000" ? "111111" : "000000"
}

/// The in-memory services over the bundled catalog, with cheap password hashing for speed.
func makeServices(clock: TestClock = TestClock(), codeLifetime: TimeInterval = 900) throws -> PhotosServices {
    PhotosServices.inMemory(catalog: try PhotoCatalog.bundled(), codeLifetime: codeLifetime, clock: clock.now, hashIterations: 16)
}

/// A `ServiceTransport` that hands each call to in-process handlers and records it, so tests
/// see exactly what a bus adapter sends; `override` replaces the reply of one method.
final class RecordingTransport: ServiceTransport {
    struct Sent: Equatable {
        var service: String
        var method: String
        var args: [String: String]
    }

    let handlers: [String: ServiceHandler]
    var sent: [Sent] = []
    var override: [String: Flowbus_V1_ServiceReply] = [:]

    init(_ handlers: [String: ServiceHandler]) {
        self.handlers = handlers
    }

    func call(service: String, _ call: Flowbus_V1_ServiceCall) throws(ServiceTransportError) -> Flowbus_V1_ServiceReply {
        sent.append(Sent(service: service, method: call.method, args: call.args))
        if let reply = override[call.method] { return reply }
        guard let handler = handlers[service] else {
            throw ServiceTransportError(service: service, reason: "no handler registered for \(service)")
        }
        return handler(call)
    }
}

extension Flowbus_V1_ServiceCall {
    init(_ method: String, _ args: [String: String] = [:]) {
        self.init()
        self.method = method
        self.args = args
    }
}
