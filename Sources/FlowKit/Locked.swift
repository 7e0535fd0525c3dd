import Foundation

/// A value only touched under a lock: the one place a plugin's logic lives, reached from the
/// worker thread, the Clone update task and the caller threads one at a time.
public final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    public init(_ value: Value) {
        self.value = value
    }

    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
