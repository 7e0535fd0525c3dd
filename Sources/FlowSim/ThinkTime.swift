import Foundation
import MessagePath

/// How long a simulated person pauses before acting, drawn from a seeded generator.
public enum ThinkTime: Sendable, Equatable, CustomStringConvertible {
    case none
    case constant(Duration)
    /// Evenly between the two.
    case uniform(Duration, Duration)
    /// Memoryless, with this mean.
    case exponential(mean: Duration)
    /// Log-normal with this median and the standard deviation of its logarithm: most pauses
    /// short, a few long, as people read.
    case logNormal(median: Duration, sigma: Double)

    /// One pause, drawn from `random`. Each kind draws a fixed number of values (none takes a
    /// variable number of tries), so a user's sequence of draws does not depend on the values.
    public func draw(_ random: inout SplitMix64) -> Duration {
        switch self {
        case .none:
            return .zero
        case .constant(let duration):
            return duration
        case .uniform(let low, let high):
            return low + (high - low) * random.nextUnitDouble()
        case .exponential(let mean):
            // 1 - u is in (0, 1], so the logarithm is finite.
            return mean * -Foundation.log(1 - random.nextUnitDouble())
        case .logNormal(let median, let sigma):
            // Box–Muller: two uniform draws make one standard normal.
            let u1 = 1 - random.nextUnitDouble(), u2 = random.nextUnitDouble()
            let normal = (-2 * Foundation.log(u1)).squareRoot() * cos(2 * .pi * u2)
            return median * Foundation.exp(sigma * normal)
        }
    }

    /// The mean pause.
    public var mean: Duration {
        switch self {
        case .none: .zero
        case .constant(let duration): duration
        case .uniform(let low, let high): (low + high) / 2
        case .exponential(let mean): mean
        case .logNormal(let median, let sigma): median * Foundation.exp(sigma * sigma / 2)
        }
    }

    public var description: String {
        switch self {
        case .none: "none"
        case .constant(let duration): "constant \(Self.text(duration))"
        case .uniform(let low, let high): "uniform \(Self.text(low))–\(Self.text(high))"
        case .exponential(let mean): "exponential, mean \(Self.text(mean))"
        case .logNormal(let median, let sigma): "log-normal, median \(Self.text(median)), sigma \(sigma)"
        }
    }

    /// `250ms` below a second, `2.5s` from one up.
    static func text(_ duration: Duration) -> String {
        let milliseconds = duration / .milliseconds(1)
        if milliseconds < 1000 { return String(format: "%.0fms", milliseconds) }
        return String(format: "%gs", (milliseconds / 100).rounded() / 10)
    }
}
