import Glibc
import Synchronization

/// How far a process's view of time is from the real one: a jump (`offset`) plus a drift (`rate`:
/// 2 runs twice as fast, 0.5 half as fast), counted from the moment it was set. A value type, so the
/// arithmetic is tested on its own; `ProcessClock` applies one to a whole process.
public struct ClockSkew: Codable, Sendable, Equatable {
    public var offsetMilliseconds: Int64
    public var rate: Double

    public init(offsetMilliseconds: Int64 = 0, rate: Double = 1) {
        self.offsetMilliseconds = offsetMilliseconds
        self.rate = rate
    }

    /// No skew at all.
    public var isNone: Bool { offsetMilliseconds == 0 && rate == 1 }

    /// Nanoseconds to add to the real time, `elapsed` real nanoseconds after the skew was set.
    public func nanoseconds(elapsed: Int64) -> Int64 {
        offsetMilliseconds &* 1_000_000 &+ Int64((Double(max(0, elapsed)) * (rate - 1)).rounded())
    }

    /// Throws what is wrong, in words a person can act on.
    public func validate() throws(ClockSkewError) {
        guard rate.isFinite, (0.01...100).contains(rate) else { throw .rate(rate) }
        guard abs(offsetMilliseconds) <= 365 * 86_400_000 else { throw .offset(offsetMilliseconds) }
    }
}

public enum ClockSkewError: Error, CustomStringConvertible, Equatable {
    case rate(Double)
    case offset(Int64)

    public var description: String {
        switch self {
        case .rate(let rate): "a clock's rate is from 0.01 to 100 (1 keeps real speed, 2 runs twice as fast); got \(rate)"
        case .offset(let offset): "a clock's offset is at most a year either way; got \(offset) ms"
        }
    }
}

/// The time a plugin process reads where time decides something — MDP heartbeats and timeouts,
/// Clone liveness, idle sessions, tokens and lockouts — skewed when the host asks
/// (`flowbus fault clock`). Costs one relaxed atomic load while the clock is true.
///
/// The wall clock takes the skew as set, back steps included (as NTP may step one). The
/// monotonic clock (`MonotonicTime`, `continuousNow`) never steps back, as no monotonic clock
/// does: a skew set below the one in force keeps the monotonic jump already made and only
/// changes the drift from then on — a clock put right runs at real speed again, still ahead.
public enum ProcessClock {
    private struct Setting {
        var skew: ClockSkew
        /// Real CLOCK_MONOTONIC nanoseconds when the skew was set.
        var setAt: Int64
        /// The monotonic jump in force from `setAt` (never below the one before).
        var monotonicBase: Int64

        func wallNanoseconds(at now: Int64) -> Int64 { skew.nanoseconds(elapsed: now - setAt) }

        func monotonicNanoseconds(at now: Int64) -> Int64 {
            monotonicBase &+ Int64((Double(max(0, now - setAt)) * (skew.rate - 1)).rounded())
        }
    }

    private static let skewed = Atomic<Bool>(false)
    private static let setting = Mutex(Setting(skew: ClockSkew(), setAt: 0, monotonicBase: 0))

    /// Skews the process's clock from now (`ClockSkew()` puts the wall clock right). `alreadyElapsed`:
    /// the real time the drift has run already, for a process that takes over a skew set before it started.
    public static func set(_ skew: ClockSkew, alreadyElapsed: Duration = .zero) {
        let now = realMonotonicNanoseconds()
        let elapsed = Int64(alreadyElapsed.wholeNanoseconds)
        let inForce = setting.withLock { setting in
            let before = setting.monotonicNanoseconds(at: now)
            // The drift already run counts as part of the jump.
            let wanted = skew.nanoseconds(elapsed: elapsed)
            setting = Setting(skew: skew, setAt: now - elapsed, monotonicBase: max(before, wanted) - (wanted - skew.offsetMilliseconds &* 1_000_000))
            return !(skew.isNone && setting.monotonicBase == 0)
        }
        skewed.store(inForce, ordering: .releasing)
    }

    /// The skew in force on the wall clock.
    public static var skew: ClockSkew { setting.withLock { $0.skew } }

    /// Nanoseconds to add to a real monotonic reading taken now (0 while the clock is true).
    @inline(__always)
    public static func skewNanoseconds() -> Int64 {
        guard skewed.load(ordering: .relaxed) else { return 0 }
        return setting.withLock { $0.monotonicNanoseconds(at: realMonotonicNanoseconds()) }
    }

    /// `ContinuousClock.now`, skewed (never stepping back).
    public static func continuousNow() -> ContinuousClock.Instant {
        ContinuousClock.now.advanced(by: .nanoseconds(skewNanoseconds()))
    }

    /// Seconds since 1970, skewed as set.
    public static func unixSeconds() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        let skew = skewed.load(ordering: .relaxed) ? setting.withLock { $0.wallNanoseconds(at: realMonotonicNanoseconds()) } : 0
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9 + Double(skew) / 1e9
    }

    static func realMonotonicNanoseconds() -> Int64 {
        Int64(truncatingIfNeeded: MonotonicTime.realNow().nanoseconds)
    }
}
