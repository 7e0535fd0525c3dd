import Foundation
import Supervision

/// A pass/fail rule of a plan, such as `p99(logIn→home) < 50ms` or `errors < 0.1%`. Any that
/// fails makes `flowbus sim` exit non-zero, naming it.
public struct Threshold: Sendable, Equatable, CustomStringConvertible {
    public enum Measure: Sendable, Equatable {
        /// A latency of a histogram: `p50(…)`, `p99.9(…)`, `max(…)`, `mean(…)`.
        case percentile(Double, metric: String)
        case max(metric: String)
        case mean(metric: String)
        /// Intents and calls that failed (unanswered or refused unexpectedly), as a share of all sent.
        case errors
        /// Journeys that failed or timed out, as a share of all ended.
        case failedJourneys
        /// Journeys completed.
        case journeys
        /// Intents answered per second over the run.
        case intentsPerSecond
    }

    public enum Comparison: String, Sendable, Equatable, CaseIterable {
        case below = "<", atMost = "<=", above = ">", atLeast = ">="

        func holds(_ value: Double, _ limit: Double) -> Bool {
            switch self {
            case .below: value < limit
            case .atMost: value <= limit
            case .above: value > limit
            case .atLeast: value >= limit
            }
        }
    }

    public var measure: Measure
    public var comparison: Comparison
    /// Milliseconds for latencies, a fraction (0.001 for 0.1%) for shares, a count or rate otherwise.
    public var limit: Double
    /// As written in the plan.
    public var text: String

    public var description: String { text }

    static let grammar = "`p99(STEP) < 50ms` (p50, p90, p99.9, max or mean of a step `action→screen`, an `intent ACTION` or a `journey NAME`), `errors < 0.1%`, `failed < 1%`, `journeys >= 100` or `intents/s > 50`"

    /// Parses one rule; the error says what is wrong and shows the forms it takes.
    public static func parse(_ text: String) throws(SimPlanError) -> Threshold {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        // The longest operators first, so `<=` is not read as `<`.
        guard let (comparison, range) = [Comparison.atMost, .atLeast, .below, .above].lazy
            .compactMap({ op in trimmed.range(of: op.rawValue).map { (op, $0) } }).first
        else {
            throw SimPlanError("threshold \"\(text)\" has no comparison; write it as \(grammar)")
        }
        let left = trimmed[..<range.lowerBound].trimmingCharacters(in: .whitespaces)
        let right = trimmed[range.upperBound...].trimmingCharacters(in: .whitespaces)
        let measure = try Self.measure(left, in: text)
        let limit: Double
        switch measure {
        case .percentile, .max, .mean:
            guard let duration = DurationText.parse(right) ?? Self.fractionalMilliseconds(right) else {
                throw SimPlanError("threshold \"\(text)\": \"\(right)\" is not a duration; write it like 50ms or 2s")
            }
            limit = duration / .milliseconds(1)
        case .errors, .failedJourneys:
            guard right.hasSuffix("%"), let percent = Double(right.dropLast().trimmingCharacters(in: .whitespaces)), percent >= 0 else {
                throw SimPlanError("threshold \"\(text)\": \"\(right)\" is not a share; write it as a percentage like 0.1%")
            }
            limit = percent / 100
        case .journeys, .intentsPerSecond:
            guard let number = Double(right), number >= 0 else {
                throw SimPlanError("threshold \"\(text)\": \"\(right)\" is not a number of 0 or more")
            }
            limit = number
        }
        return Threshold(measure: measure, comparison: comparison, limit: limit, text: SimMetrics.canonicalName(trimmed))
    }

    /// `12.5ms`, which `DurationText` (whole units) does not read.
    static func fractionalMilliseconds(_ text: String) -> Duration? {
        guard text.hasSuffix("ms"), let value = Double(text.dropLast(2)), value >= 0 else { return nil }
        return .microseconds(Int64((value * 1000).rounded()))
    }

    private static func measure(_ text: String, in rule: String) throws(SimPlanError) -> Measure {
        switch text {
        case "errors": return .errors
        case "failed": return .failedJourneys
        case "journeys": return .journeys
        case "intents/s": return .intentsPerSecond
        default: break
        }
        guard let open = text.firstIndex(of: "("), text.hasSuffix(")") else {
            throw SimPlanError("threshold \"\(rule)\": \"\(text)\" is not something a plan measures; write it as \(grammar)")
        }
        let function = String(text[..<open])
        let metric = SimMetrics.canonicalName(String(text[text.index(after: open)..<text.index(before: text.endIndex)]))
        guard !metric.isEmpty else { throw SimPlanError("threshold \"\(rule)\" names no step, intent or journey between the brackets") }
        switch function {
        case "max": return .max(metric: metric)
        case "mean": return .mean(metric: metric)
        default:
            guard function.hasPrefix("p"), let percentile = Double(function.dropFirst()), percentile > 0, percentile <= 100 else {
                throw SimPlanError("threshold \"\(rule)\": \"\(function)\" is not p50, p90, p99, p99.9, max or mean")
            }
            return .percentile(percentile, metric: metric)
        }
    }

    /// The metric this rule reads, if it reads a histogram.
    public var metric: String? {
        switch measure {
        case .percentile(_, let metric), .max(let metric), .mean(let metric): metric
        default: nil
        }
    }
}

/// What is wrong with a sim plan, saying where and what to write instead.
public struct SimPlanError: Error, CustomStringConvertible, Equatable {
    public var description: String
    public init(_ description: String) { self.description = description }
}
