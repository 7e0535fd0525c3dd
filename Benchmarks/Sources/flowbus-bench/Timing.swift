import CRawZMQ
import Glibc

/// Nanoseconds on the monotonic clock: one vDSO call, cheap enough to take per request.
@inline(__always)
func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
}

/// Exact order statistics of a set of latencies (sorted once; 20,000 samples sort in a millisecond).
struct LatencySummary: Sendable, Codable {
    var count: Int
    var p50: Double
    var p90: Double
    var p99: Double
    var p999: Double
    var mean: Double
    var min: Double
    var max: Double

    /// `samples` in nanoseconds; the summary is in microseconds.
    init(nanoseconds samples: [UInt64]) {
        precondition(!samples.isEmpty, "a latency summary needs at least one sample")
        let sorted = samples.sorted()
        func quantile(_ q: Double) -> Double {
            // Nearest rank: the smallest sample with at least q of all samples at or below it.
            let rank = Swift.max(1, Int((q * Double(sorted.count)).rounded(.up)))
            return Double(sorted[rank - 1]) / 1000
        }
        count = sorted.count
        p50 = quantile(0.50)
        p90 = quantile(0.90)
        p99 = quantile(0.99)
        p999 = quantile(0.999)
        mean = Double(sorted.reduce(0, +)) / Double(sorted.count) / 1000
        min = Double(sorted[0]) / 1000
        max = Double(sorted[sorted.count - 1]) / 1000
    }

    var text: String {
        "p50 \(format(p50)) µs, p99 \(format(p99)) µs, p99.9 \(format(p999)) µs, mean \(format(mean)) µs, max \(format(max)) µs (n=\(count))"
    }
}

func format(_ value: Double, decimals: Int = 1) -> String {
    String(format: "%.\(decimals)f", value)
}

/// 1234567 → "1,234,567".
func grouped(_ value: Double) -> String {
    guard value.isFinite else { return "-" }
    let whole = Int(value.rounded())
    var digits = Array(String(abs(whole)))
    var index = digits.count - 3
    while index > 0 {
        digits.insert(",", at: index)
        index -= 3
    }
    return (whole < 0 ? "-" : "") + String(digits)
}

/// CPU time (user + system) of the whole process, every thread: what one benchmark phase costs
/// the machine, which wall-clock rates on a shared 2-core box do not show.
struct ProcessCPU {
    let nanoseconds: UInt64
    /// The user-space part of `nanoseconds`.
    var userNanoseconds: UInt64 = 0
    /// Times a thread of the process gave up the CPU to wait (`ru_nvcsw`): its sleeps, so its wake-ups.
    var sleeps: Int = 0

    static func now() -> ProcessCPU {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        let user = Int(usage.ru_utime.tv_sec) * 1_000_000 + Int(usage.ru_utime.tv_usec)
        let system = Int(usage.ru_stime.tv_sec) * 1_000_000 + Int(usage.ru_stime.tv_usec)
        return ProcessCPU(nanoseconds: UInt64(user + system) * 1000, userNanoseconds: UInt64(user) * 1000,
                          sleeps: Int(usage.ru_nvcsw))
    }

    /// Microseconds of CPU per operation since `start`.
    static func microseconds(since start: ProcessCPU, operations: Int) -> Double {
        split(since: start, operations: operations).microseconds
    }

    /// CPU per operation since `start`, split into user and system time, with the threads' sleeps.
    struct Split: Sendable {
        var microseconds: Double
        var userMicroseconds: Double
        var sleeps: Double

        var text: String {
            "CPU \(format(microseconds)) µs (user \(format(userMicroseconds)), system \(format(microseconds - userMicroseconds))), "
                + "\(format(sleeps)) thread sleeps"
        }
    }

    static func split(since start: ProcessCPU, operations: Int) -> Split {
        let end = now(), count = Double(max(1, operations))
        return Split(microseconds: Double(end.nanoseconds - start.nanoseconds) / 1000 / count,
                     userMicroseconds: Double(end.userNanoseconds - start.userNanoseconds) / 1000 / count,
                     sleeps: Double(end.sleeps - start.sleeps) / count)
    }
}

/// A measured phase's instructions, for `Benchmarks/scripts/instructions`: run under
/// `valgrind --tool=callgrind`, each phase zeroes callgrind's counts where it starts and dumps
/// them where it ends, labelled with what was measured and how many operations, so the dump holds
/// exactly that phase's instructions, every thread of the process counted. Outside valgrind the
/// calls do nothing.
enum Instructions {
    static func start() { CRawZMQ_instructionsZero() }

    /// Ends the phase begun by the last `start()`: "LABEL | OPERATIONS" is the dump's trigger.
    static func stop(_ label: String, operations: Int) {
        "\(label) | \(operations)".withCString { CRawZMQ_instructionsDump($0) }
    }

    /// Running under valgrind (`Benchmarks/scripts/instructions`), some forty times slower.
    static let underValgrind = CRawZMQ_underValgrind() != 0
}
