import Foundation
import Histogram
import Synchronization

extension SimMetrics {
    /// Everything a runner measured, as it travels from an agent to the run's coordinator: the
    /// histograms themselves (their non-empty buckets, not their percentiles), so the merged
    /// run's figures are exact, as if one process had measured them all.
    public struct Snapshot: Codable, Sendable {
        var histograms: [String: Buckets]
        var families: [String: Family]
        var errors: [String: Int]
        var errorExamples: [String: String]
        var requests: Int
        var failedRequests: Int
        var journeysCompleted: Int
        var journeysFailed: Int
        var journeysTimedOut: Int
        var journeysCutShort: Int
        var seconds: [SecondSnapshot]

        struct SecondSnapshot: Codable, Sendable {
            var intents: Int
            var errors: Int
            var journeysEnded: Int
            var users: Int
            var steps: Buckets
        }
    }

    /// A histogram's non-empty buckets: a few hundred numbers where the whole counts array is
    /// tens of thousands (a run's report would not fit in one bus message). With the smallest and
    /// largest values recorded, which percentiles 0 and 100 return as they were, not as buckets.
    struct Buckets: Codable, Sendable {
        var values: [UInt64]
        var counts: [UInt64]
        var smallest: UInt64
        var largest: UInt64

        init<Count>(_ histogram: Histogram<Count>) {
            values = []
            counts = []
            for bucket in histogram.recordedValues() {
                values.append(bucket.value)
                counts.append(UInt64(bucket.count))
            }
            smallest = histogram.min
            largest = histogram.maxRecorded
        }

        /// Records each bucket's count into `histogram`, at a value of that bucket (exact): the
        /// first bucket's at the smallest value and the last bucket's at the largest, so the
        /// merged histogram's smallest and largest are the recorded ones, not a bucket's edge.
        func add<Count>(to histogram: inout Histogram<Count>) {
            func record(_ value: UInt64, _ count: UInt64) {
                if count > 0 { _ = histogram.record(Swift.min(value, SimMetrics.highest), count: Count(clamping: count)) }
            }
            guard values.count > 1 else {
                // One bucket: the smallest once, the rest at the largest (the same bucket).
                if let count = counts.first { record(smallest, 1); record(largest, count - 1) }
                return
            }
            for (index, (value, count)) in zip(values, counts).enumerated() {
                record(index == values.count - 1 ? largest : index == 0 ? smallest : value, count)
            }
        }
    }

    public func snapshot() -> Snapshot {
        state.withLock { state in
            Snapshot(
                histograms: state.histograms.mapValues(Buckets.init), families: state.families, errors: state.errors,
                errorExamples: state.errorExamples, requests: state.requests, failedRequests: state.failedRequests,
                journeysCompleted: state.journeysCompleted, journeysFailed: state.journeysFailed, journeysTimedOut: state.journeysTimedOut,
                journeysCutShort: state.journeysCutShort,
                seconds: state.seconds.map {
                    Snapshot.SecondSnapshot(intents: $0.intents, errors: $0.errors, journeysEnded: $0.journeysEnded, users: $0.users, steps: Buckets($0.steps))
                })
        }
    }

    /// Adds another runner's measurements (an agent's, whose clock started at the same instant):
    /// histograms add bucket by bucket, counts add, second `i` adds to second `i`.
    public func merge(_ other: Snapshot) {
        state.withLock { state in
            for (name, buckets) in other.histograms {
                if let family = other.families[name] { state.families[name] = family }
                var histogram = state.histograms[name] ?? Self.histogram()
                buckets.add(to: &histogram)
                state.histograms[name] = histogram
            }
            for (kind, count) in other.errors {
                state.errors[kind, default: 0] += count
                if state.errorExamples[kind] == nil { state.errorExamples[kind] = other.errorExamples[kind] }
            }
            state.requests += other.requests
            state.failedRequests += other.failedRequests
            state.journeysCompleted += other.journeysCompleted
            state.journeysFailed += other.journeysFailed
            state.journeysTimedOut += other.journeysTimedOut
            state.journeysCutShort += other.journeysCutShort
            while state.seconds.count < other.seconds.count { state.seconds.append(Second()) }
            for (index, second) in other.seconds.enumerated() {
                state.seconds[index].intents += second.intents
                state.seconds[index].errors += second.errors
                state.seconds[index].journeysEnded += second.journeysEnded
                state.seconds[index].users += second.users
                second.steps.add(to: &state.seconds[index].steps)
            }
        }
    }
}
