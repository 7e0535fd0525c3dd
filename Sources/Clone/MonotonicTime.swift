import Glibc

/// Nanoseconds on the monotonic clock: one cheap vDSO call, plain integer arithmetic after.
struct MonotonicTime: Comparable, Hashable {
    var nanoseconds: UInt64

    static func now() -> MonotonicTime {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return MonotonicTime(nanoseconds: UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec))
    }

    static func < (lhs: MonotonicTime, rhs: MonotonicTime) -> Bool { lhs.nanoseconds < rhs.nanoseconds }

    static func + (lhs: MonotonicTime, rhs: Duration) -> MonotonicTime {
        MonotonicTime(nanoseconds: lhs.nanoseconds &+ rhs.wholeNanoseconds)
    }

    /// The time from `self` until `later`, zero if `later` has passed.
    func until(_ later: MonotonicTime) -> Duration {
        later.nanoseconds > nanoseconds ? .nanoseconds(Int64(later.nanoseconds - nanoseconds)) : .zero
    }
}

extension Duration {
    /// Whole nanoseconds, clamped to zero for negative durations.
    var wholeNanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return 0 }
        return UInt64(seconds) &* 1_000_000_000 &+ UInt64(max(0, attoseconds) / 1_000_000_000)
    }
}
