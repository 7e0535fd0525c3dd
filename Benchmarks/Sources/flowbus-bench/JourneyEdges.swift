import Foundation

/// Issue 16, "say where every remaining microsecond goes": each timed milestone of app-journey
/// split in three by the host's own record of the session (`flowbus trace --json`), on the one
/// wall clock the client and the host share (`WallClock`, one machine):
/// - **to the host**: the client sends the intent → the broker takes it in (the trace's intent);
/// - **at the host**: → the Clone server takes in the write of the state that meets the
///   milestone (the trace's state event with that screen and version);
/// - **back to the view**: → the client's view shows that state (where the benchmark's watcher
///   saw it).
/// The host keeps the last 2,000 events of a session, so the split covers the last journeys.
enum JourneyEdges {
    /// What the client knows of one milestone it reached.
    struct Sample: Sendable {
        var label: String
        /// The idempotency key of the intent sent (the last try's, for one sent again).
        var intentKey: String
        var sentUnixNanos: Int64
        var reachedUnixNanos: Int64
        /// The screen kind and version of the state that met the milestone.
        var screen: String
        var version: UInt64
    }

    /// Per milestone label: the three parts of each sample found in the trace, in nanoseconds.
    struct Split: Sendable {
        var toHost: [UInt64] = []
        var atHost: [UInt64] = []
        var back: [UInt64] = []
    }

    /// The session's recorded events, read with `flowbus trace --json` from the running host.
    static func trace(flowbus: String, runDirectory: String, session: String, in directory: URL) throws(BenchError) -> [[String: Any]] {
        let (code, output) = IdleMemory.execute(
            flowbus, ["trace", session, "--json", "--run-dir", runDirectory, "--log-level", "error"], in: directory)
        guard code == 0 else {
            throw BenchError("`flowbus trace \(session) --json --run-dir \(runDirectory)` exited \(code): \(output.prefix(300))")
        }
        guard let start = output.firstIndex(of: "{"),
              let object = try? JSONSerialization.jsonObject(with: Data(output[start...].utf8)) as? [String: Any],
              let events = object["events"] as? [[String: Any]] else {
            throw BenchError("`flowbus trace \(session) --json` printed no events list: \(output.prefix(300))")
        }
        return events
    }

    /// Matches each sample with the trace: its intent by idempotency key, its state by screen and
    /// version. Samples whose events the host no longer keeps are left out.
    static func split(_ samples: [Sample], events: [[String: Any]]) -> [String: Split] {
        var intents: [String: Int64] = [:]
        var states: [String: Int64] = [:]
        for event in events {
            guard let kind = event["kind"] as? String, let at = (event["atUnixNanos"] as? NSNumber)?.int64Value else { continue }
            if kind == "intent", let key = event["idempotencyKey"] as? String {
                intents[key] = intents[key] ?? at
            } else if kind == "state", let screen = event["screen"] as? String, let version = (event["version"] as? NSNumber)?.uint64Value {
                states["\(screen)#\(version)"] = states["\(screen)#\(version)"] ?? at
            }
        }
        var splits: [String: Split] = [:]
        for sample in samples {
            guard let received = intents[sample.intentKey], let written = states["\(sample.screen)#\(sample.version)"],
                  sample.sentUnixNanos <= received, received <= written, written <= sample.reachedUnixNanos else { continue }
            var split = splits[sample.label] ?? Split()
            split.toHost.append(UInt64(received - sample.sentUnixNanos))
            split.atHost.append(UInt64(written - received))
            split.back.append(UInt64(sample.reachedUnixNanos - written))
            splits[sample.label] = split
        }
        return splits
    }

    /// One row per milestone split: the time at the host, with the edges in the note (and a
    /// progress line each).
    /// `whole`: each label's p50 over every measured journey (µs), set beside the three parts'
    /// sum so a split that lost its way shows.
    static func rows(_ splits: [String: Split], labels: [String], whole: [String: Double], benchmark: String) -> [ResultRow] {
        labels.compactMap { label in
            guard let split = splits[label], !split.atHost.isEmpty else { return nil }
            let toHost = LatencySummary(nanoseconds: split.toHost)
            let atHost = LatencySummary(nanoseconds: split.atHost)
            let back = LatencySummary(nanoseconds: split.back)
            let µs = { (value: Double) in format(value) }
            let sum = toHost.p50 + atHost.p50 + back.p50
            progress("\(benchmark): \(label): client → host p50 \(µs(toHost.p50)) µs, at the host \(µs(atHost.p50)) µs, "
                + "host → view \(µs(back.p50)) µs (\(split.atHost.count) intents)")
            return ResultRow(
                benchmark, "\(label), at the host, p50", unit: "ms", flowbus: atHost.p50 / 1000,
                note: "\(label) split by the host's history (`flowbus trace`, one wall clock), \(split.atHost.count) of the last intents: "
                    + "client → host (the broker takes the intent in) p50 \(µs(toHost.p50)) µs, p99 \(µs(toHost.p99)) µs; "
                    + "at the host (→ the Clone server takes in the state's write) p50 \(µs(atHost.p50)) µs, p99 \(µs(atHost.p99)) µs; "
                    + "host → the client's view p50 \(µs(back.p50)) µs, p99 \(µs(back.p99)) µs; the three p50s add up to \(µs(sum)) µs"
                    + (whole[label].map { ", the milestone's own p50 over every journey \(µs($0)) µs" } ?? ""))
        }
    }
}
