import Foundation

/// Writes a run's `report.json` (every figure) and `report.html` (one self-contained page: the
/// figures, the thresholds, and plots drawn as inline SVG, so it opens with no network).
public enum SimReport {
    public static func write(_ result: SimResult, to directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(result).write(to: URL(fileURLWithPath: directory + "/report.json"))
        try Data(html(result).utf8).write(to: URL(fileURLWithPath: directory + "/report.html"))
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }

    static func number(_ value: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", value) }

    public static func html(_ result: SimResult) -> String {
        let verdict = result.passed ? "PASS" : "FAIL"
        var page = """
        <!doctype html><html lang="en"><head><meta charset="utf-8"><title>flowbus sim: \(escape(result.plan)) (\(verdict))</title>
        <style>
        body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}
        h1{font-size:1.5em} h2{font-size:1.15em;margin-top:1.8em;border-bottom:1px solid #ddd}
        table{border-collapse:collapse;margin:.5em 0} td,th{padding:3px 10px;border-bottom:1px solid #eee;text-align:right}
        td:first-child,th:first-child{text-align:left} .pass{color:#17752b;font-weight:600} .fail{color:#b3261e;font-weight:600}
        .plots{display:flex;flex-wrap:wrap;gap:18px} figure{margin:0} figcaption{font-size:12px;color:#555}
        code{background:#f4f4f4;padding:1px 4px}
        </style></head><body>
        <h1>flowbus sim: \(escape(result.plan)) <span class="\(result.passed ? "pass" : "fail")">\(verdict)</span></h1>
        <p>Seed <code>\(result.seed)</code>, schedule hash <code>\(result.scheduleHash)</code>, run <code>\(escape(result.runTag))</code>.
        \(result.model == "open" ? "Open model, up to \(number(result.peak)) arrivals/s" : "Closed model, up to \(Int(result.peak)) users"); pauses \(escape(result.think)); \(number(result.seconds)) s.</p>
        <table><tr><th>journeys completed</th><th>failed</th><th>timed out</th><th>cut short at the end</th><th>users started</th><th>requests</th><th>failed requests</th><th>intents/s</th></tr>
        <tr><td>\(result.journeysCompleted)</td><td>\(result.journeysFailed)</td><td>\(result.journeysTimedOut)</td><td>\(result.journeysCutShort)</td><td>\(result.usersStarted)</td><td>\(result.requests)</td><td>\(result.failedRequests) (\(number(result.errorShare * 100, 3))%)</td><td>\(number(result.intentsPerSecond))</td></tr></table>
        <p>The app \(result.keptUp ? "kept up" : "did <b>not</b> keep up"): \(escape(result.keptUpReason)).</p>
        <p>Simulator: \(number(result.simulator.cpuSeconds, 2)) s of CPU (\(number(result.simulator.cpuMicrosecondsPerIntent)) µs per intent), \(result.simulator.residentBytes / 1_048_576) MiB resident, about \(result.simulator.bytesPerUser / 1024) KiB per user at \(result.simulator.peakUsers) users, \(result.simulator.lanes) request lanes.</p>

        """
        if let agents = result.agents, !agents.isEmpty {
            page += "<h2>Agents</h2><p>Each played its share of the users; the figures above are their histograms merged, not their percentiles averaged.</p>"
            page += "<table><tr><th>agent</th><th>name</th><th>users started</th><th>intents</th><th>journeys completed</th><th>CPU (s)</th><th>resident (MiB)</th></tr>"
            for agent in agents {
                page += "<tr><td>\(agent.index)</td><td>\(escape(agent.name))</td><td>\(agent.usersStarted)</td><td>\(agent.intents)</td><td>\(agent.journeysCompleted)</td><td>\(number(agent.cpuSeconds, 2))</td><td>\(agent.residentBytes / 1_048_576)</td></tr>"
            }
            page += "</table>\n"
        }
        if !result.thresholds.isEmpty {
            page += "<h2>Thresholds</h2><table><tr><th>rule</th><th>measured</th><th>verdict</th></tr>"
            for threshold in result.thresholds {
                let measured = threshold.value.map { threshold.unit == "share" ? number($0 * 100, 3) + "%" : number($0, 2) + " " + threshold.unit } ?? "—"
                page += "<tr><td><code>\(escape(threshold.rule))</code></td><td>\(measured)</td><td class=\"\(threshold.passed ? "pass" : "fail")\">\(threshold.passed ? "pass" : "FAIL: " + escape(threshold.detail))</td></tr>"
            }
            page += "</table>\n"
        }
        page += "<h2>Latencies (ms)</h2><table><tr><th>measured</th><th>count</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th><th>mean</th></tr>"
        for metric in result.metrics {
            page += "<tr><td>\(escape(metric.name))</td><td>\(metric.count)</td><td>\(number(metric.p50, 2))</td><td>\(number(metric.p90, 2))</td><td>\(number(metric.p99, 2))</td><td>\(number(metric.p999, 2))</td><td>\(number(metric.max, 2))</td><td>\(number(metric.mean, 2))</td></tr>"
        }
        page += "</table>\n"
        if !result.errors.isEmpty {
            page += "<h2>Errors by kind</h2><table><tr><th>kind</th><th>count</th><th>first example</th></tr>"
            for error in result.errors {
                page += "<tr><td>\(escape(error.kind))</td><td>\(error.count)</td><td style=\"text-align:left;white-space:pre-wrap;font-size:12px\">\(escape(String(error.example.prefix(600))))</td></tr>"
            }
            page += "</table>\n"
        }
        let times = result.timeline.map { Double($0.second) }
        page += "<h2>Over time</h2><div class=\"plots\">"
        page += plot("Step latency per second (ms): p50, p99", x: times, series: [
            ("p50", "#1f77b4", result.timeline.map(\.p50)), ("p99", "#d62728", result.timeline.map(\.p99)),
        ], xLabel: "s")
        page += plot("Throughput and errors per second", x: times, series: [
            ("intents", "#2ca02c", result.timeline.map { Double($0.intents) }), ("errors", "#d62728", result.timeline.map { Double($0.errors) }),
            ("journeys ended", "#9467bd", result.timeline.map { Double($0.journeysEnded) }),
        ], xLabel: "s")
        page += plot("Users running", x: times, series: [("users", "#ff7f0e", result.timeline.map { Double($0.users) })], xLabel: "s")
        page += "</div><h2>Percentile curves</h2><div class=\"plots\">"
        let palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"]
        for family in ["step", "intent", "journey"] {
            let chosen = result.metrics.filter { $0.family == family }.prefix(palette.count)
            guard !chosen.isEmpty else { continue }
            // x: the percentile on a log scale of 1/(1-p), so the tail has room (100 is drawn at 99.999).
            let xs = chosen[chosen.startIndex].curve.map { -log10(max(1 - min($0[0], 99.999) / 100, 1e-5)) }
            let ticks: [(Double, String)] = [(0, "p0"), (1, "p90"), (2, "p99"), (3, "p99.9"), (4, "p99.99"), (5, "max")]
            page += plot("\(family)s: latency (ms) by percentile", x: xs, series: chosen.enumerated().map { index, metric in
                (metric.name, palette[index], metric.curve.map { $0[1] })
            }, xLabel: "", ticks: ticks)
        }
        page += "</div></body></html>\n"
        return page
    }

    /// A line chart as inline SVG.
    /// `ticks`: labels under the x axis (default: its two ends, the right one with `xLabel`).
    static func plot(_ title: String, x: [Double], series: [(String, String, [Double])], xLabel: String, ticks: [(Double, String)]? = nil) -> String {
        let width = 520.0, height = 240.0, left = 48.0, bottom = 26.0, top = 10.0, right = 10.0
        let maxX = max(x.max() ?? 1, 1e-9), minX = x.min() ?? 0
        let maxY = max(series.flatMap(\.2).max() ?? 1, 1e-9)
        func px(_ value: Double) -> Double { left + (value - minX) / max(maxX - minX, 1e-9) * (width - left - right) }
        func py(_ value: Double) -> Double { height - bottom - value / maxY * (height - bottom - top) }
        var svg = "<figure><svg width=\"\(Int(width))\" height=\"\(Int(height))\" viewBox=\"0 0 \(Int(width)) \(Int(height))\" xmlns=\"http://www.w3.org/2000/svg\">"
        svg += "<rect x=\"\(left)\" y=\"\(top)\" width=\"\(width - left - right)\" height=\"\(height - bottom - top)\" fill=\"#fafafa\" stroke=\"#ccc\"/>"
        for fraction in [0.0, 0.5, 1.0] {
            let value = maxY * fraction
            svg += "<text x=\"\(left - 4)\" y=\"\(py(value) + 4)\" font-size=\"10\" text-anchor=\"end\">\(number(value, value < 10 ? 1 : 0))</text>"
        }
        for (value, label) in ticks ?? [(minX, number(minX, 0)), (maxX, number(maxX, 0) + xLabel)] {
            let anchor = value <= minX ? "start" : value >= maxX ? "end" : "middle"
            svg += "<line x1=\"\(number(px(value), 1))\" y1=\"\(height - bottom)\" x2=\"\(number(px(value), 1))\" y2=\"\(height - bottom + 4)\" stroke=\"#999\"/>"
            svg += "<text x=\"\(number(px(value), 1))\" y=\"\(height - 8)\" font-size=\"10\" text-anchor=\"\(anchor)\">\(escape(label))</text>"
        }
        for (index, (name, color, values)) in series.enumerated() {
            let points = zip(x, values).map { "\(number(px($0), 1)),\(number(py($1), 1))" }.joined(separator: " ")
            if !points.isEmpty { svg += "<polyline fill=\"none\" stroke=\"\(color)\" stroke-width=\"1.6\" points=\"\(points)\"/>" }
            svg += "<text x=\"\(left + 6)\" y=\"\(top + 14 + Double(index) * 13)\" font-size=\"11\" fill=\"\(color)\">\(escape(name))</text>"
        }
        svg += "</svg><figcaption>\(escape(title))</figcaption></figure>"
        return svg
    }
}
