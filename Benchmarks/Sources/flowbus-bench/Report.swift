import Foundation

/// One line of the final table.
struct ResultRow: Sendable, Encodable {
    enum Verdict: String, Sendable, Codable {
        case pass = "PASS"
        case miss = "MISS"
        /// An absolute target this machine cannot reach even with raw libzmq on the same path, so
        /// the ratio to raw libzmq stands for it (as the issue allows); `note` says which raw figure.
        case ratio = "RATIO"
        /// A figure shown for context; no target applies to it.
        case info = "-"
        /// The benchmark could not run; `note` says why.
        case unavailable = "N/A"
        case failed = "FAILED"
    }

    var benchmark: String
    var measure: String
    var unit: String
    var flowbus: Double?
    var raw: Double?
    /// What the raw figure is (REQ/REP, PUB→SUB, ...).
    var rawLabel: String?
    /// Flowbus relative to raw, in the direction that makes "bigger is slower" (latency) or
    /// "smaller is slower" (rates) read naturally: latency ratio = flowbus / raw, rate ratio = flowbus / raw.
    var ratio: Double? {
        guard let flowbus, let raw, raw > 0 else { return nil }
        return flowbus / raw
    }
    var target: String
    var verdict: Verdict
    var note: String?

    init(
        _ benchmark: String, _ measure: String, unit: String, flowbus: Double?, raw: Double? = nil,
        rawLabel: String? = nil, target: String = "", verdict: Verdict = .info, note: String? = nil
    ) {
        self.benchmark = benchmark
        self.measure = measure
        self.unit = unit
        self.flowbus = flowbus
        self.raw = raw
        self.rawLabel = rawLabel
        self.target = target
        self.verdict = verdict
        self.note = note
    }

    static func unavailable(_ benchmark: String, _ reason: String) -> ResultRow {
        ResultRow(benchmark, "not available yet", unit: "", flowbus: nil, target: "", verdict: .unavailable, note: reason)
    }

    static func failed(_ benchmark: String, _ reason: String) -> ResultRow {
        ResultRow(benchmark, "failed", unit: "", flowbus: nil, target: "", verdict: .failed, note: reason)
    }

    enum CodingKeys: String, CodingKey {
        case benchmark, measure, unit, flowbus, raw, rawLabel, ratio, target, verdict, note
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(benchmark, forKey: .benchmark)
        try container.encode(measure, forKey: .measure)
        try container.encode(unit, forKey: .unit)
        try container.encodeIfPresent(flowbus, forKey: .flowbus)
        try container.encodeIfPresent(raw, forKey: .raw)
        try container.encodeIfPresent(rawLabel, forKey: .rawLabel)
        try container.encodeIfPresent(ratio, forKey: .ratio)
        try container.encode(target, forKey: .target)
        try container.encode(verdict, forKey: .verdict)
        try container.encodeIfPresent(note, forKey: .note)
    }
}

/// Everything one run produced, as the JSON file holds it.
struct RunReport: Sendable, Encodable {
    var date: String
    var revision: String
    var machine: String
    var load: String
    var libzmq: String
    var quick: Bool
    var rows: [ResultRow]
}

enum Table {
    /// The final table: one row per figure, then the notes.
    static func render(_ rows: [ResultRow]) -> String {
        let header = ["BENCHMARK", "MEASURE", "FLOWBUS", "RAW LIBZMQ", "RATIO", "TARGET", "RESULT"]
        var lines = [header]
        var notes: [String] = []
        for row in rows {
            var result = row.verdict.rawValue
            if let note = row.note {
                notes.append(note)
                result += " [\(notes.count)]"
            }
            lines.append([
                row.benchmark,
                row.measure,
                row.flowbus.map { figure($0, unit: row.unit) } ?? "-",
                row.raw.map { figure($0, unit: row.unit) + (row.rawLabel.map { " (\($0))" } ?? "") } ?? "-",
                row.ratio.map { String(format: "%.2f×", $0) } ?? "-",
                row.target.isEmpty ? "-" : row.target,
                result,
            ])
        }
        let widths = header.indices.map { column in lines.map { $0[column].count }.max() ?? 0 }
        var text = lines.map { cells in
            cells.enumerated().map { index, cell in
                index == cells.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }.joined(separator: "\n")
        if !notes.isEmpty {
            text += "\n\n" + notes.enumerated().map { "[\($0.offset + 1)] \($0.element)" }.joined(separator: "\n")
        }
        return text
    }

    static func figure(_ value: Double, unit: String) -> String {
        switch unit {
        case "µs": return format(value) + " µs"
        case "req/s", "updates/s", "msg/s": return grouped(value) + " " + unit
        case "MiB": return format(value) + " MiB"
        case "count": return grouped(value)
        default: return format(value, decimals: 2) + (unit.isEmpty ? "" : " " + unit)
        }
    }
}
