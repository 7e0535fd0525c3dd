import Glibc
import Synchronization

/// One side of a partition, cut inside a process: while it lasts, every message that arrives on
/// a socket this process *connected* to a network endpoint (`ipc://`, `tcp://`…, never
/// `inproc://`) is received and thrown away, as if lost on the way from the host. A plugin cuts it
/// when the host asks (`flowbus fault partition --direction from-host`); the host itself never
/// does, since its sockets bind.
///
/// Costs one relaxed atomic load per message received on such a socket while nothing is cut.
public enum IncomingPartition {
    /// CLOCK_MONOTONIC nanoseconds at which the cut heals; 0 when there is none.
    private static let healsAt = Atomic<UInt64>(0)
    private static let discardedCount = Atomic<Int>(0)

    /// Cuts the incoming side for `duration` from now (replacing an earlier cut).
    public static func cut(for duration: Duration) {
        let nanoseconds = UInt64(max(0, duration.components.seconds)) &* 1_000_000_000
            &+ UInt64(max(0, duration.components.attoseconds) / 1_000_000_000)
        healsAt.store(max(1, realNanoseconds() &+ nanoseconds), ordering: .releasing)
    }

    /// Ends the cut now.
    public static func heal() {
        healsAt.store(0, ordering: .releasing)
    }

    /// Whether messages from the network are being thrown away now.
    public static var isCut: Bool {
        let until = healsAt.load(ordering: .relaxed)
        return until != 0 && realNanoseconds() < until
    }

    /// Messages thrown away since the process started.
    public static var discarded: Int { discardedCount.load(ordering: .relaxed) }

    @inline(__always)
    static var mayBeCut: Bool { healsAt.load(ordering: .relaxed) != 0 }

    static func countDiscarded() {
        discardedCount.add(1, ordering: .relaxed)
    }

    /// The real monotonic clock (never skewed: a cut lasts its real duration).
    static func realNanoseconds() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec)
    }
}
