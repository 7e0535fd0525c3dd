import Foundation

/// A count that only grows, for threads that wait for it to reach a mark: how far a Clone
/// agent's writes are settled (`CloneAgent.settle`), how many times a key changed
/// (`StateMap.wait(forChangesOf:)`). Closed, it wakes every waiter and no more come true.
///
/// Besides threads that block, it keeps bodies to run once the count reaches their mark
/// (`whenReached`), so that nobody has to sleep on it: a runtime's answer leaves from the thread
/// that settled its writes (a Clone agent's), without waking the lane that made them.
public final class WaitableMark: @unchecked Sendable {
    private let condition = NSCondition()
    private var through: UInt64 = 0
    private var closed = false
    /// Threads blocked in `wait(for:until:)`: the count's moves wake nobody when there are none,
    /// and wake those there are after the lock is let go of (woken under it, a thread would run,
    /// find it held, and sleep again until the unlock woke it a second time).
    private var sleepers = 0
    /// Bodies waiting for their mark, in the order given; their marks never decrease (each is at
    /// least the one before it), so they come true in that order.
    private var waiters: [Waiter] = []
    private var waitersStart = 0
    /// Bodies whose mark came (or whose time ran out), to run in this order, outside the lock.
    private var ready: [(body: (Bool) -> Void, reached: Bool)] = []
    /// A thread is running `ready`'s bodies: others leave theirs to it, so none overtakes another.
    private var running = false
    /// When the thread that expires waiters (`expire(now:)`) means to look next, as it last said
    /// (`plan(wake:)`); a waiter due sooner must wake it.
    private var plannedWake = MonotonicTime(nanoseconds: .max)

    private struct Waiter {
        var mark: UInt64
        var deadline: MonotonicTime
        var body: (Bool) -> Void
    }

    public init() {}

    /// The count now.
    public var value: UInt64 {
        condition.lock()
        defer { condition.unlock() }
        return through
    }

    /// Sets the count to `mark`, wakes the waiters and runs the bodies whose mark came.
    public func advance(to mark: UInt64) {
        condition.lock()
        through = mark
        let run = takeReached()
        let wake = sleepers > 0
        condition.unlock()
        if wake { condition.broadcast() }
        if run { runReady() }
    }

    /// Adds one to the count and wakes the waiters.
    public func advance() {
        condition.lock()
        through += 1
        let run = takeReached()
        let wake = sleepers > 0
        condition.unlock()
        if wake { condition.broadcast() }
        if run { runReady() }
    }

    /// Nothing more will come: every wait ends now, and every body waiting runs with false.
    public func close() {
        condition.lock()
        closed = true
        for waiter in waiters[waitersStart...] { ready.append((waiter.body, false)) }
        waiters.removeAll()
        waitersStart = 0
        let run = claimRunner()
        condition.unlock()
        condition.broadcast()
        if run { runReady() }
    }

    /// Runs `body(true)` once the count reaches `mark`, on the thread that makes it so (now, on
    /// this one, if it has and nothing waits before it); `body(false)` if `deadline` passes first
    /// (run by `expire(now:)`) or the mark is closed. Bodies run one at a time, in the order
    /// given, never under the mark's lock: one must not wait for another thread. Returns true
    /// when the deadline falls before the wake last planned (`plan(wake:)`): wake the thread
    /// that expires waiters, so that it plans again.
    @discardableResult
    public func whenReached(_ mark: UInt64, deadline: MonotonicTime, _ body: @escaping (Bool) -> Void) -> Bool {
        condition.lock()
        if closed {
            condition.unlock()
            body(false)
            return false
        }
        // In order: a body given later waits for those before it.
        let mark = waitersStart < waiters.count ? max(mark, waiters[waiters.count - 1].mark) : mark
        if through >= mark && waitersStart == waiters.count && ready.isEmpty && !running {
            condition.unlock()
            body(true)
            return false
        }
        waiters.append(Waiter(mark: mark, deadline: deadline, body: body))
        let run = takeReached()
        // Still waiting (it is the last one given) and due before that thread means to look.
        let wake = waitersStart < waiters.count && deadline < plannedWake
        condition.unlock()
        if run { runReady() }
        return wake
    }

    /// The thread that calls `expire(now:)` means to look again at `wake` at the latest: returns
    /// the earlier of it and the first waiter's deadline, when that thread must look instead.
    public func plan(wake: MonotonicTime) -> MonotonicTime {
        condition.lock()
        defer { condition.unlock() }
        var earliest = wake
        for waiter in waiters[waitersStart...] where waiter.deadline < earliest { earliest = waiter.deadline }
        plannedWake = earliest
        return earliest
    }

    /// Runs with false the bodies whose deadline passed; the others wait on, in their order.
    public func expire(now: MonotonicTime) {
        condition.lock()
        guard waiters[waitersStart...].contains(where: { $0.deadline <= now }) else {
            condition.unlock()
            return
        }
        var kept: [Waiter] = []
        for waiter in waiters[waitersStart...] {
            if waiter.deadline <= now { ready.append((waiter.body, false)) } else { kept.append(waiter) }
        }
        waiters = kept
        waitersStart = 0
        let run = claimRunner()
        condition.unlock()
        if run { runReady() }
    }

    /// Bodies waiting for their mark.
    public var waiting: Int {
        condition.lock()
        defer { condition.unlock() }
        return waiters.count - waitersStart
    }

    /// Under the lock: moves the waiters whose mark came to `ready`; true when this thread must
    /// run them (nobody else is).
    private func takeReached() -> Bool {
        var taken = false
        while waitersStart < waiters.count, waiters[waitersStart].mark <= through {
            ready.append((waiters[waitersStart].body, true))
            waitersStart += 1
            taken = true
        }
        if taken { compactWaiters() }
        return claimRunner()
    }

    /// Under the lock: true when bodies are ready and nobody runs them, this thread now the one.
    private func claimRunner() -> Bool {
        guard !ready.isEmpty, !running else { return false }
        running = true
        return true
    }

    private func compactWaiters() {
        if waitersStart == waiters.count {
            waiters.removeAll(keepingCapacity: true)
            waitersStart = 0
        } else if waitersStart > 64 && waitersStart * 2 > waiters.count {
            waiters.removeFirst(waitersStart)
            waitersStart = 0
        }
    }

    /// Runs the ready bodies, outside the lock, until none is left (others may add some meanwhile).
    private func runReady() {
        while true {
            condition.lock()
            guard !ready.isEmpty else {
                running = false
                condition.unlock()
                return
            }
            let batch = ready
            ready = []
            condition.unlock()
            for (body, reached) in batch { body(reached) }
        }
    }

    /// Waits until the count reaches `mark`; false when the time ran out or the mark was closed first.
    public func wait(for mark: UInt64, until deadline: Date) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while through < mark {
            if closed { return false }
            sleepers += 1
            let woken = condition.wait(until: deadline)
            sleepers -= 1
            if !woken { return through >= mark }
        }
        return true
    }
}
