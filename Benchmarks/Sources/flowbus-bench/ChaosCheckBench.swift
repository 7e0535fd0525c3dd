@_spi(Benchmarks) import FlowChaos
import FlowHost
import Foundation
import MessagePath

/// The checker of `flowbus chaos` on a run of a million events (issue 14: under 10 s): 10,000
/// sessions, each a client log of 80 events (intents, replies, navigation and states) and a host
/// history of 20, with a few anomalies planted so every check does its work. Timed twice: the
/// check alone, and `flowbus chaos check DIR`'s whole path (decode run.json, then check).
struct ChaosCheckBench {
    let options: Options

    func run() -> [ResultRow] {
        let sessions = options.quick ? 1_000 : 10_000
        progress("chaos-check: making a run of \(sessions * 100) events")
        let run = Self.makeRun(sessions: sessions)
        let events = run.sessions.reduce(0) { $0 + $1.clients.reduce(0) { $0 + $1.events.count } + ($1.trace?.events.count ?? 0) }
        let checker = ChaosChecker()
        var findings = checker.check(run)
        let checkSeconds = Self.best(of: 3) { findings = checker.check(run) }
        guard findings.eventsChecked == events, findings.counts[.lost] == sessions / 100, findings.counts[.appliedTwice] == sessions / 100 else {
            return [.failed("chaos-check", "the checker did not find what was planted: \(findings.counts), \(findings.eventsChecked) of \(events) events")]
        }
        progress("chaos-check: \(events) events checked in \(String(format: "%.2f", checkSeconds)) s; now through JSON")
        let data: Data
        do {
            data = try JSONEncoder().encode(run)
        } catch {
            return [.failed("chaos-check", "run.json could not be written: \(error)")]
        }
        /// `flowbus chaos check DIR`'s whole path with `decode`: seconds, nil when it failed.
        func fromFile(_ decode: (Data) throws -> ChaosRun) -> Double? {
            var failed = false
            let seconds = Self.best(of: 1) {
                do {
                    findings = checker.check(try decode(data))
                } catch {
                    failed = true
                }
            }
            return failed ? nil : seconds
        }
        let fileSeconds = fromFile { try ChaosRun.decode(from: $0) }
        // The same path as it was before `RunJSONReader` (JSONDecoder on every core), in this run.
        let baselineSeconds = fromFile { try ChaosRun.decodeWithJSONDecoderOnEveryCore(from: $0) }
        func shown(_ seconds: Double?) -> String { seconds.map { String(format: "%.2f s", $0) } ?? "failed" }
        progress("chaos-check: from run.json \(shown(fileSeconds)); with JSONDecoder on every core (the path before) \(shown(baselineSeconds))")
        // Issue 14: a run of a million events checked in under 10 s.
        let target = 10.0 * Double(events) / 1_000_000
        let targetText = String(format: "< %.1f s", target)
        return [
            ResultRow("chaos-check", "\(events) events, the check alone", unit: "s", flowbus: checkSeconds,
                      target: targetText, verdict: checkSeconds < target ? .pass : .miss,
                      note: "\(Int(Double(events) / checkSeconds)) events/s"),
            ResultRow("chaos-check", "\(events) events, from run.json (\(data.count / 1_048_576) MiB)", unit: "s",
                      flowbus: fileSeconds, raw: baselineSeconds,
                      rawLabel: "JSONDecoder on every core, as before RunJSONReader", target: targetText,
                      verdict: fileSeconds.map { $0 < target ? .pass : .miss } ?? .failed,
                      note: "reading run.json (`ChaosRun.decode`: the sessions in one slice per core, each read by `RunJSONReader` straight into the records; the rest by `JSONDecoder`) and the check, as `flowbus chaos check DIR`"),
        ]
    }

    static func best(of tries: Int, _ body: () -> Void) -> Double {
        var best = Double.infinity
        for _ in 0..<tries {
            let start = ContinuousClock.now
            body()
            let elapsed = ContinuousClock.now - start
            best = min(best, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18)
        }
        return best
    }

    /// Sessions of 100 events each; one in a hundred loses an intent, one in a hundred has a key
    /// applied twice.
    static func makeRun(sessions count: Int) -> ChaosRun {
        var sessions: [ChaosSessionRecord] = []
        sessions.reserveCapacity(count)
        for index in 0..<count {
            let id = "s\(index)"
            var events: [ClientEvent] = []
            events.reserveCapacity(80)
            var at: Int64 = 1_000
            var navigation: UInt64 = 0
            for step in 0..<16 {
                let key = "\(id)/k\(step)"
                var intent = ClientEvent(kind: .intent, key: "vm.home", version: navigation, atUnixNanos: at)
                intent.idempotencyKey = key
                intent.action = "select"
                events.append(intent)
                at += 1_000
                var loading = ClientEvent(kind: .state, key: "/s/\(id)/vm/home", version: UInt64(step * 2 + 1), atUnixNanos: at)
                loading.phase = "loading"
                events.append(loading)
                at += 1_000
                let lose = index % 100 == 7 && step == 15
                if !lose {
                    var reply = ClientEvent(kind: .reply, key: "vm.home", atUnixNanos: at)
                    reply.idempotencyKey = key
                    reply.applied = true
                    events.append(reply)
                }
                at += 1_000
                var success = ClientEvent(kind: .state, key: "/s/\(id)/vm/home", version: UInt64(step * 2 + 2), atUnixNanos: at)
                success.phase = "success"
                events.append(success)
                navigation += 1
                events.append(ClientEvent(kind: .navigation, key: "/s/\(id)/nav", sequence: navigation, version: navigation, atUnixNanos: at))
                at += 1_000
            }
            var history: [TraceEvent] = []
            for step in 0..<20 {
                var reply = TraceEvent(kind: .reply, session: id, atUnixNanos: Int64(step) * 1_000, from: "vm-home/0")
                reply.service = "vm.home"
                reply.applied = true
                reply.idempotencyKey = "\(id)/k\(index % 100 == 3 && step == 19 ? 18 : step)"
                reply.version = UInt64(step + 1)
                history.append(reply)
            }
            let client = ClientRecord(name: "c\(index)", events: events, finalNavigation: navigation, finalScreen: "home")
            let trace = SessionTrace(session: id, events: history, droppedEvents: 0, closed: true, limits: SessionHistoryLimits())
            sessions.append(ChaosSessionRecord(session: id, journey: "bench.yaml", passed: true, expectedScreen: "home",
                                               finalScreen: "home", clients: [client], trace: trace))
        }
        return ChaosRun(plan: FaultPlan(name: "bench", seed: 1, events: []), decisions: [], sessions: sessions, processes: [],
                        startedAtUnixNanos: 0, endedAtUnixNanos: 1)
    }
}
