import FlowHost
import Foundation
import MessagePath

/// A run's report folder: what `flowbus chaos run` leaves and `flowbus chaos check` reads again.
///
///     run.json        the whole run (plan, decisions, journeys, client logs, host histories)
///     plan.txt        the plan's timeline, with its seed
///     decisions.txt   each fault injected, one line each
///     findings.json   the checker's counts, per session
///     report.md       the verdict, the counts, and for each failed session its first anomaly,
///                     its trace and a Mermaid excerpt around that anomaly
///     sessions/ID.mmd the Mermaid excerpt of each failed session
public enum ChaosReport {
    public static func write(_ run: ChaosRun, findings: ChaosFindings, to directory: URL, runFile: Bool = true) throws {
        let files = FileManager.default
        try files.createDirectory(at: directory.appendingPathComponent("sessions"), withIntermediateDirectories: true)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        if runFile { try encoder.encode(run).write(to: directory.appendingPathComponent("run.json")) }
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        try encoder.encode(findings).write(to: directory.appendingPathComponent("findings.json"))
        try text(planText(run.plan), directory, "plan.txt")
        try text(run.decisions.map(\.line).joined(separator: "\n") + "\n", directory, "decisions.txt")
        var markdown = summary(run, findings)
        for session in findings.sessions where session.failed {
            guard let record = run.sessions.first(where: { $0.session == session.session }) else { continue }
            markdown += sessionSection(record, session)
            if let excerpt = mermaidExcerpt(record, around: session.first) {
                try text(excerpt, directory, "sessions/\(session.session).mmd")
            }
        }
        try text(markdown, directory, "report.md")
    }

    public static func read(from directory: URL) throws -> ChaosRun {
        try ChaosRun.decode(from: Data(contentsOf: directory.appendingPathComponent("run.json")))
    }

    /// The verdict line: `PASS: 0 anomalies in 24 sessions (seed 14)` or the counts that failed it.
    public static func verdict(_ findings: ChaosFindings, seed: UInt64) -> String {
        let failing = findings.counts.filter { $0.key.failsTheRun && $0.value > 0 }.sorted { $0.key < $1.key }
        if failing.isEmpty {
            return "PASS: nothing lost, applied twice, out of order or stale in \(findings.sessionsChecked) sessions (\(findings.intents) intents, \(findings.faultsInjected) faults injected; seed \(seed))"
        }
        return "FAIL: " + failing.map { "\($0.value) \($0.key.rawValue)" }.joined(separator: ", ")
            + " in \(findings.sessions.filter(\.failed).count) of \(findings.sessionsChecked) sessions (seed \(seed))"
    }

    /// The plan's timeline for people.
    public static func planText(_ plan: FaultPlan) -> String {
        (["plan \(plan.name), seed \(plan.seed): \(plan.events.count) event\(plan.events.count == 1 ? "" : "s")"] + plan.events.map { "  " + $0.summary }).joined(separator: "\n") + "\n"
    }

    /// The counts, as the terminal shows them.
    public static func countsTable(_ findings: ChaosFindings) -> String {
        var lines = ["  \(findings.sessionsChecked) sessions, \(findings.intents) intents (\(findings.applied) applied, \(findings.refused) refused), \(findings.eventsChecked) events checked, \(findings.faultsInjected) faults injected"]
        for anomaly in ChaosAnomaly.allCases {
            let count = findings.counts[anomaly] ?? 0
            lines.append("  \(String(count).padding(toLength: 6, withPad: " ", startingAt: 0)) \(anomaly.rawValue.padding(toLength: 17, withPad: " ", startingAt: 0)) \(anomaly.meaning)")
        }
        return lines.joined(separator: "\n")
    }

    static func summary(_ run: ChaosRun, _ findings: ChaosFindings) -> String {
        var text = "# Chaos run: \(run.plan.name)\n\n**\(verdict(findings, seed: run.plan.seed))**\n\n"
        text += "Replay: `flowbus chaos run PLAN --seed \(run.plan.seed)`; re-check: `flowbus chaos check DIR`.\n\n"
        text += "| count | anomaly | meaning |\n|---:|---|---|\n"
        for anomaly in ChaosAnomaly.allCases {
            text += "| \(findings.counts[anomaly] ?? 0) | \(anomaly.rawValue) | \(anomaly.meaning) |\n"
        }
        text += "\n\(findings.sessionsChecked) sessions, \(findings.intents) intents (\(findings.applied) applied, \(findings.refused) refused), "
        text += "\(findings.eventsChecked) events checked, \(findings.faultsInjected) faults injected.\n\n"
        text += "## Plan\n\n```\n\(planText(run.plan))```\n"
        let stopped = run.processes.filter { !$0.running }
        if !stopped.isEmpty {
            text += "\n## Plugins not running at the end\n\n" + stopped.map { "- \($0.name)/\($0.replica) (restarted \($0.restarts) times)" }.joined(separator: "\n") + "\n"
        }
        return text
    }

    static func sessionSection(_ record: ChaosSessionRecord, _ findings: ChaosSessionFindings) -> String {
        var text = "\n## Session \(record.session) (\(record.journey))\n\n"
        text += findings.counts.sorted { $0.key < $1.key }.map { "- \($0.value) \($0.key.rawValue)" }.joined(separator: "\n") + "\n"
        if let first = findings.first { text += "\nFirst: **\(first.anomaly.rawValue)** — \(first.detail)\n" }
        if let failure = record.failure { text += "\nJourney: \(failure)\n" }
        if let trace = record.trace {
            text += "\n```\n\(TraceTimeline.text(trace))\n```\n"
        }
        return text
    }

    /// The session's diagram over the 30 events around its first anomaly.
    static func mermaidExcerpt(_ record: ChaosSessionRecord, around note: ChaosAnomalyNote?) -> String? {
        guard var trace = record.trace, !trace.events.isEmpty else { return nil }
        let at = note?.atUnixNanos ?? trace.events.last!.atUnixNanos
        let center = trace.events.firstIndex { $0.atUnixNanos >= at } ?? trace.events.count - 1
        let range = max(0, center - 15)..<min(trace.events.count, center + 15)
        trace.events = Array(trace.events[range])
        var diagram = MermaidSequence.diagram(trace)
        if let note { diagram = "%% first anomaly: \(note.anomaly.rawValue): \(note.detail)\n" + diagram }
        return diagram
    }

    private static func text(_ text: String, _ directory: URL, _ name: String) throws {
        try Data(text.utf8).write(to: directory.appendingPathComponent(name))
    }
}
