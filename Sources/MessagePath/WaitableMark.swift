import Foundation

/// A count that only grows, for threads that wait for it to reach a mark: how far a Clone
/// agent's writes are settled (`CloneAgent.settle`), how many times a key changed
/// (`StateMap.wait(forChangesOf:)`). Closed, it wakes every waiter and no more come true.
public final class WaitableMark: @unchecked Sendable {
    private let condition = NSCondition()
    private var through: UInt64 = 0
    private var closed = false

    public init() {}

    /// The count now.
    public var value: UInt64 {
        condition.lock()
        defer { condition.unlock() }
        return through
    }

    /// Sets the count to `mark` and wakes the waiters.
    public func advance(to mark: UInt64) {
        condition.lock()
        through = mark
        condition.broadcast()
        condition.unlock()
    }

    /// Adds one to the count and wakes the waiters.
    public func advance() {
        condition.lock()
        through += 1
        condition.broadcast()
        condition.unlock()
    }

    /// Nothing more will come: every wait ends now.
    public func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }

    /// Waits until the count reaches `mark`; false when the time ran out or the mark was closed first.
    public func wait(for mark: UInt64, until deadline: Date) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while through < mark {
            if closed || !condition.wait(until: deadline) { return through >= mark }
        }
        return true
    }
}
