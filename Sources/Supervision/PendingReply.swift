import Dispatch
import Synchronization

/// A value one thread hands to another that blocks until it arrives.
final class PendingReply<Value: Sendable>: Sendable {
    private let value = Mutex<Value?>(nil)
    private let ready = DispatchSemaphore(value: 0)

    func fulfil(_ newValue: Value) {
        value.withLock { $0 = newValue }
        ready.signal()
    }

    func wait() -> Value {
        ready.wait()
        return value.withLock { $0! }
    }
}
