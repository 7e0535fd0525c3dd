import Foundation
import Histogram
import Synchronization

/// Everything a run measures, shared by every simulated user: latency histograms (microseconds,
/// exact to three significant digits, mergeable), counts of errors by kind, and a per-second
/// series for the report's plots.
public final class SimMetrics: Sendable {
    /// 1 µs to 10 minutes: any step longer than that is a timeout, counted as an error.
    static let highest: UInt64 = 600_000_000

    public enum Family: String, Sendable, Codable {
        /// Intent sent → the expected screen, as the following expect step says it.
        case step
        /// Intent sent → its reply (with the client's own retries).
        case intent
        /// Journey start (as scheduled) → its last step.
        case journey
    }

    struct Second {
        var intents = 0
        var errors = 0
        var journeysEnded = 0
        var users = 0
        var steps = Histogram<UInt32>(lowestDiscernibleValue: 1, highestTrackableValue: SimMetrics.highest, numberOfSignificantValueDigits: .two)
    }

    struct State {
        var histograms: [String: Histogram<UInt64>] = [:]
        var families: [String: Family] = [:]
        var errors: [String: Int] = [:]
        var errorExamples: [String: String] = [:]
        var requests = 0
        var failedRequests = 0
        var journeysCompleted = 0
        var journeysFailed = 0
        var journeysTimedOut = 0
        var journeysCutShort = 0
        var seconds: [Second] = []
    }

    let state = Mutex(State())
    let start: ContinuousClock.Instant

    public init(start: ContinuousClock.Instant = .now) {
        self.start = start
    }

    /// `->` written for `→`, spaces trimmed: how thresholds and the report name a metric.
    public static func canonicalName(_ name: String) -> String {
        name.replacingOccurrences(of: "->", with: "→").trimmingCharacters(in: .whitespaces)
    }

    private func second(_ at: ContinuousClock.Instant, _ state: inout State) -> Int {
        let index = max(0, Int((at - start) / .seconds(1)))
        while state.seconds.count <= index { state.seconds.append(Second()) }
        return index
    }

    static func microseconds(_ duration: Duration) -> UInt64 {
        let value = duration / .microseconds(1)
        return UInt64(min(max(value, 1), Double(highest)))
    }

    /// A latency histogram: 1 µs to `highest`, three significant digits.
    static func histogram() -> Histogram<UInt64> {
        Histogram(lowestDiscernibleValue: 1, highestTrackableValue: highest, numberOfSignificantValueDigits: .three)
    }

    /// A latency of `name`, ending `at`.
    public func record(_ family: Family, _ name: String, _ latency: Duration, at: ContinuousClock.Instant = .now) {
        let micros = Self.microseconds(latency)
        state.withLock { state in
            state.families[name] = family
            state.histograms[name, default: Self.histogram()]
                .record(micros)
            let index = second(at, &state)
            switch family {
            case .step: state.seconds[index].steps.record(micros)
            case .intent: state.seconds[index].intents += 1
            case .journey: break
            }
        }
    }

    /// An intent or call sent (counted once, whatever its retries).
    public func requestSent() {
        state.withLock { $0.requests += 1 }
    }

    /// A step that failed, by kind (`intent refused (staleIntent)`, `expect timed out`…), with
    /// the first example of each kind kept for the report. `request` when it was an intent or call.
    public func error(_ kind: String, example: String, request: Bool, at: ContinuousClock.Instant = .now) {
        state.withLock { state in
            state.errors[kind, default: 0] += 1
            if state.errorExamples[kind] == nil { state.errorExamples[kind] = String(example.prefix(2000)) }
            if request { state.failedRequests += 1 }
            state.seconds[second(at, &state)].errors += 1
        }
    }

    public enum JourneyEnd: Sendable {
        case completed, failed, timedOut, cutShort
    }

    public func journeyEnded(_ end: JourneyEnd, at: ContinuousClock.Instant = .now) {
        state.withLock { state in
            switch end {
            case .completed: state.journeysCompleted += 1
            case .failed: state.journeysFailed += 1
            case .timedOut: state.journeysTimedOut += 1
            case .cutShort: state.journeysCutShort += 1
            }
            state.seconds[second(at, &state)].journeysEnded += 1
        }
    }

    /// The users running, sampled once a second by the runner.
    public func users(_ count: Int, at: ContinuousClock.Instant = .now) {
        state.withLock { state in
            let index = second(at, &state)
            state.seconds[index].users = max(state.seconds[index].users, count)
        }
    }

    /// The figures a progress line shows.
    public struct Progress: Sendable {
        public var intentsLastSecond: Int
        public var errors: Int
        public var journeysCompleted: Int
        /// Journeys that ended on a step that failed (refused, the wrong screen…).
        public var journeysFailed: Int
        /// Journeys that ended on a step still waiting when its time ran out (an overloaded app's
        /// ending): the run's summary counts them apart from the failed, and so does progress.
        public var journeysTimedOut: Int
        /// p99 of every step so far, in milliseconds.
        public var stepP99: Double
    }

    /// How a progress line tells the journeys that ended: `journeys 120 ok, 2 failed, 3 timed
    /// out`, the words of the run's summary.
    public static func journeys(completed: Int, failed: Int, timedOut: Int) -> String {
        "journeys \(completed) ok, \(failed) failed, \(timedOut) timed out"
    }

    public func progress(at: ContinuousClock.Instant = .now) -> Progress {
        state.withLock { state in
            let index = second(at, &state)
            let last = index > 0 ? state.seconds[index - 1].intents : state.seconds[index].intents
            var steps = Self.histogram()
            for (name, histogram) in state.histograms where state.families[name] == .step { steps.add(histogram) }
            return Progress(
                intentsLastSecond: last, errors: state.errors.values.reduce(0, +), journeysCompleted: state.journeysCompleted,
                journeysFailed: state.journeysFailed, journeysTimedOut: state.journeysTimedOut,
                stepP99: steps.totalCount == 0 ? 0 : Double(steps.valueAtPercentile(99)) / 1000)
        }
    }
}
