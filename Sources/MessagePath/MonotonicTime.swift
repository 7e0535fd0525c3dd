import Glibc

/// Nanoseconds on the monotonic clock: one cheap vDSO call, plain integer arithmetic after,
/// for socket loops that read the time on every wake-up.
public struct MonotonicTime: Comparable, Hashable, Sendable {
    public var nanoseconds: UInt64

    public init(nanoseconds: UInt64) {
        self.nanoseconds = nanoseconds
    }

    /// Now, as this process sees it: skewed when the host skews a plugin's clock (`ProcessClock`).
    public static func now() -> MonotonicTime {
        let real = realNow().nanoseconds
        let skew = ProcessClock.skewNanoseconds()
        return MonotonicTime(nanoseconds: skew >= 0 ? real &+ UInt64(skew) : real &- min(real, UInt64(-skew)))
    }

    /// Now on the real monotonic clock, whatever skew the process's clock has.
    public static func realNow() -> MonotonicTime {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return MonotonicTime(nanoseconds: UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec))
    }

    public static func < (lhs: MonotonicTime, rhs: MonotonicTime) -> Bool { lhs.nanoseconds < rhs.nanoseconds }

    public static func + (lhs: MonotonicTime, rhs: Duration) -> MonotonicTime {
        MonotonicTime(nanoseconds: lhs.nanoseconds &+ rhs.wholeNanoseconds)
    }

    /// The time from `earlier` to `self`, zero if `earlier` is later.
    public func since(_ earlier: MonotonicTime) -> Duration {
        nanoseconds > earlier.nanoseconds ? .nanoseconds(Int64(nanoseconds - earlier.nanoseconds)) : .zero
    }

    /// The time from `self` until `later`, zero if `later` has passed.
    public func until(_ later: MonotonicTime) -> Duration {
        later.since(self)
    }

    /// `self` plus `nanoseconds`: for a loop that converts its timeouts once and adds them at
    /// every wake-up without `Duration` arithmetic (128-bit sums and quotients).
    public func adding(nanoseconds: UInt64) -> MonotonicTime {
        MonotonicTime(nanoseconds: self.nanoseconds &+ nanoseconds)
    }

    /// The nanoseconds from `self` until `later`, zero if `later` has passed.
    public func nanoseconds(until later: MonotonicTime) -> UInt64 {
        later.nanoseconds > nanoseconds ? later.nanoseconds - nanoseconds : 0
    }
}

extension Duration {
    /// Whole nanoseconds, clamped to zero for negative durations.
    public var wholeNanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return 0 }
        return UInt64(seconds) &* 1_000_000_000 &+ UInt64(max(0, attoseconds) / 1_000_000_000)
    }

    public var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) * 1e-18
    }
}
