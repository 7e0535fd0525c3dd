import Foundation
import Histogram
import Synchronization

/// Every figure of a run: what `report.json` holds and `report.html` draws.
public struct SimResult: Codable, Sendable {
    public var plan: String
    public var seed: UInt64
    /// The hash of every user's schedule (`SimSchedule.hash`): equal for the same plan and seed.
    public var scheduleHash: String
    public var runTag: String
    public var model: String
    /// Users (closed) or arrivals per second (open) at the highest stage.
    public var peak: Double
    public var think: String
    public var seconds: Double
    public var requests: Int
    public var failedRequests: Int
    public var errorShare: Double
    public var journeysCompleted: Int
    public var journeysFailed: Int
    public var journeysTimedOut: Int
    public var journeysCutShort: Int
    public var usersStarted: Int
    public var intentsPerSecond: Double
    public var metrics: [MetricSummary]
    public var errors: [ErrorKind]
    public var timeline: [SecondSummary]
    public var thresholds: [ThresholdResult]
    public var simulator: SimulatorFigures
    /// Whether the app kept up: under 1% of requests failed and every step's p99 stayed below
    /// the mean pause (users were not left waiting longer than they think).
    public var keptUp: Bool
    public var keptUpReason: String
    /// A run across machines: each agent's share (nil for a run in one process).
    public var agents: [AgentSummary]? = nil

    public var passed: Bool { thresholds.allSatisfy(\.passed) }

    public struct MetricSummary: Codable, Sendable {
        public var name: String
        public var family: String
        public var count: UInt64
        /// Milliseconds.
        public var p50: Double, p90: Double, p99: Double, p999: Double, max: Double, mean: Double
        /// (percentile, milliseconds) points of the percentile curve, for the plot.
        public var curve: [[Double]]
        /// The histogram itself, so agents' runs merge exactly.
        public var histogram: Histogram<UInt64>?
    }

    public struct ErrorKind: Codable, Sendable {
        public var kind: String
        public var count: Int
        public var example: String
    }

    public struct SecondSummary: Codable, Sendable {
        public var second: Int
        public var intents: Int
        public var errors: Int
        public var journeysEnded: Int
        public var users: Int
        /// Steps ending in this second, milliseconds (0 when none ended).
        public var p50: Double
        public var p99: Double
    }

    public struct ThresholdResult: Codable, Sendable {
        public var rule: String
        public var value: Double?
        public var unit: String
        public var passed: Bool
        /// Why it failed, when it did, in a sentence.
        public var detail: String

        public init(rule: String, value: Double?, unit: String, passed: Bool, detail: String) {
            self.rule = rule
            self.value = value
            self.unit = unit
            self.passed = passed
            self.detail = detail
        }
    }

    public struct AgentSummary: Codable, Sendable {
        public var index: Int
        public var name: String
        public var usersStarted: Int
        public var intents: Int
        public var journeysCompleted: Int
        public var cpuSeconds: Double
        public var residentBytes: Int
    }

    public struct SimulatorFigures: Codable, Sendable {
        public var cpuSeconds: Double
        public var cpuMicrosecondsPerIntent: Double
        public var residentBytes: Int
        public var residentBytesAtStart: Int
        /// (resident now − at start) / peak users: what a simulated session costs this process.
        public var bytesPerUser: Int
        public var peakUsers: Int
        public var lanes: Int
    }
}

extension SimMetrics {
    /// The summary of everything measured, with the thresholds judged; `simulator`'s CPU per
    /// intent is worked out here, from its CPU seconds and the intents counted.
    func result(plan: SimPlan, runTag: String, scheduleHash: String, elapsed: Duration, usersStarted: Int,
                simulator: SimResult.SimulatorFigures) -> SimResult {
        state.withLock { state in
            let seconds = max(elapsed / .seconds(1), 0.001)
            var metrics: [SimResult.MetricSummary] = []
            for (name, histogram) in state.histograms.sorted(by: { $0.key < $1.key }) {
                metrics.append(Self.summary(name: name, family: state.families[name] ?? .step, histogram))
            }
            let intents = metrics.filter { $0.family == Family.intent.rawValue }.reduce(0) { $0 + Int($1.count) }
            var simulator = simulator
            simulator.cpuMicrosecondsPerIntent = intents > 0 ? simulator.cpuSeconds * 1e6 / Double(intents) : 0
            let timeline = state.seconds.enumerated().map { index, second in
                SimResult.SecondSummary(
                    second: index, intents: second.intents, errors: second.errors, journeysEnded: second.journeysEnded, users: second.users,
                    p50: second.steps.totalCount == 0 ? 0 : Double(second.steps.valueAtPercentile(50)) / 1000,
                    p99: second.steps.totalCount == 0 ? 0 : Double(second.steps.valueAtPercentile(99)) / 1000)
            }
            let errorShare = state.requests == 0 ? 0 : Double(state.failedRequests) / Double(state.requests)
            var result = SimResult(
                plan: plan.name, seed: plan.seed, scheduleHash: scheduleHash, runTag: runTag,
                model: plan.load.isOpen ? "open" : "closed", peak: plan.load.peak, think: plan.think.description, seconds: seconds,
                requests: state.requests, failedRequests: state.failedRequests, errorShare: errorShare,
                journeysCompleted: state.journeysCompleted, journeysFailed: state.journeysFailed, journeysTimedOut: state.journeysTimedOut,
                journeysCutShort: state.journeysCutShort, usersStarted: usersStarted, intentsPerSecond: Double(intents) / seconds,
                metrics: metrics,
                errors: state.errors.sorted { $0.value > $1.value }.map { SimResult.ErrorKind(kind: $0.key, count: $0.value, example: state.errorExamples[$0.key] ?? "") },
                timeline: timeline, thresholds: [], simulator: simulator, keptUp: true, keptUpReason: "")
            result.thresholds = plan.thresholds.map { Self.judge($0, result) }
            let worst = metrics.filter { $0.family == Family.step.rawValue }.max { $0.p99 < $1.p99 }
            let meanPause = plan.think.mean / .milliseconds(1)
            if errorShare >= 0.01 {
                result.keptUp = false
                result.keptUpReason = String(format: "%.2f%% of requests failed (1%% or more)", errorShare * 100)
            } else if let worst, meanPause > 0, worst.p99 >= meanPause {
                result.keptUp = false
                result.keptUpReason = String(format: "p99 of %@ was %.1f ms, not below the mean pause of %.0f ms", worst.name, worst.p99, meanPause)
            } else {
                // Joined as Swift strings: with no step measured, `worst?.p99 ?? 0` and the pause's
                // clause through one format printed "0.0 ms(null)".
                let belowPause = meanPause > 0 ? String(format: ", below the mean pause of %.0f ms", meanPause) : ""
                let slowest = worst.map { String(format: "the slowest step's p99 was %.1f ms", $0.p99) + belowPause } ?? "no step was measured"
                result.keptUpReason = String(format: "%.2f%% of requests failed; ", errorShare * 100) + slowest
            }
            return result
        }
    }

    static func summary(name: String, family: Family, _ histogram: Histogram<UInt64>) -> SimResult.MetricSummary {
        func ms(_ percentile: Double) -> Double { Double(histogram.valueAtPercentile(percentile)) / 1000 }
        let points: [Double] = [0, 10, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99, 100]
        return SimResult.MetricSummary(
            name: name, family: family.rawValue, count: histogram.totalCount,
            p50: ms(50), p90: ms(90), p99: ms(99), p999: ms(99.9), max: Double(histogram.max) / 1000, mean: histogram.mean / 1000,
            curve: points.map { [$0, ms($0)] }, histogram: histogram)
    }

    static func judge(_ threshold: Threshold, _ result: SimResult) -> SimResult.ThresholdResult {
        func verdict(_ value: Double?, _ unit: String, shown: (Double) -> String) -> SimResult.ThresholdResult {
            guard let value else {
                return SimResult.ThresholdResult(
                    rule: threshold.text, value: nil, unit: unit, passed: false,
                    detail: "nothing was measured for \(threshold.metric ?? "it"); measured: \(result.metrics.map(\.name).joined(separator: ", "))")
            }
            let passed = threshold.comparison.holds(value, threshold.limit)
            return SimResult.ThresholdResult(
                rule: threshold.text, value: value, unit: unit, passed: passed,
                detail: passed ? "" : "was \(shown(value)), not \(threshold.comparison.rawValue) \(shown(threshold.limit))")
        }
        let metric = threshold.metric.flatMap { name in result.metrics.first { $0.name == name } }
        switch threshold.measure {
        case .percentile(let percentile, _):
            return verdict(metric.flatMap { $0.histogram }.map { Double($0.valueAtPercentile(percentile)) / 1000 }, "ms") { String(format: "%.2f ms", $0) }
        case .max: return verdict(metric?.max, "ms") { String(format: "%.2f ms", $0) }
        case .mean: return verdict(metric?.mean, "ms") { String(format: "%.2f ms", $0) }
        case .errors: return verdict(result.errorShare, "share") { String(format: "%.3f%%", $0 * 100) }
        case .failedJourneys:
            let ended = result.journeysCompleted + result.journeysFailed + result.journeysTimedOut
            let failed = result.journeysFailed + result.journeysTimedOut
            return verdict(ended == 0 ? 0 : Double(failed) / Double(ended), "share") { String(format: "%.3f%%", $0 * 100) }
        case .journeys: return verdict(Double(result.journeysCompleted), "journeys") { String(format: "%.0f", $0) }
        case .intentsPerSecond: return verdict(result.intentsPerSecond, "intents/s") { String(format: "%.1f", $0) }
        }
    }
}
