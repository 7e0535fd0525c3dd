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
    let whole = Int(value.rounded())
    var digits = Array(String(abs(whole)))
    var index = digits.count - 3
    while index > 0 {
        digits.insert(",", at: index)
        index -= 3
    }
    return (whole < 0 ? "-" : "") + String(digits)
}
