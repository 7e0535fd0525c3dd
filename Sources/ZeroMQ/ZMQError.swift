import CZeroMQ
import Glibc

/// An errno value as libzmq reports it, with named constants for the ones callers branch on.
public struct ZMQErrorCode: RawRepresentable, Hashable, Sendable {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    public static let again = ZMQErrorCode(rawValue: EAGAIN)
    public static let interrupted = ZMQErrorCode(rawValue: EINTR)
    public static let invalidArgument = ZMQErrorCode(rawValue: EINVAL)
    public static let hostUnreachable = ZMQErrorCode(rawValue: EHOSTUNREACH)
    public static let addressInUse = ZMQErrorCode(rawValue: EADDRINUSE)
    public static let addressNotAvailable = ZMQErrorCode(rawValue: EADDRNOTAVAIL)
    public static let notSocket = ZMQErrorCode(rawValue: ENOTSOCK)
    public static let protocolNotSupported = ZMQErrorCode(rawValue: EPROTONOSUPPORT)
    public static let noDevice = ZMQErrorCode(rawValue: ENODEV)
    /// The context was terminated while the call was in progress (libzmq's ETERM).
    public static let terminated = ZMQErrorCode(rawValue: 156_384_765)
    /// The operation is not valid in the socket's current state (libzmq's EFSM).
    public static let wrongState = ZMQErrorCode(rawValue: 156_384_763)
}

/// A failed libzmq call: which call, the errno, and libzmq's own text for it.
public struct ZMQError: Error, CustomStringConvertible, Sendable {
    public let code: ZMQErrorCode
    public let operation: String

    public init(code: ZMQErrorCode, operation: String) {
        self.code = code
        self.operation = operation
    }

    /// The text `zmq_strerror` gives for the errno.
    public var message: String { String(cString: zmq_strerror(code.rawValue)) }

    public var description: String { "\(operation) failed: \(message) (errno \(code.rawValue))" }

    /// The error for the calling thread's current `zmq_errno()`.
    static func last(_ operation: @autoclosure () -> String) -> ZMQError {
        ZMQError(code: ZMQErrorCode(rawValue: zmq_errno()), operation: operation())
    }
}

/// Runs a libzmq call that returns -1 on failure, retrying on EINTR.
/// Returns nil when the call would block (EAGAIN), so callers treat "not now" as a value.
@inline(__always)
func retryingInterrupts(_ operation: @autoclosure () -> String, _ call: () -> Int32) throws(ZMQError) -> Int32? {
    while true {
        let result = call()
        if result >= 0 { return result }
        let code = zmq_errno()
        if code == EINTR { continue }
        if code == EAGAIN { return nil }
        throw ZMQError(code: ZMQErrorCode(rawValue: code), operation: operation())
    }
}
