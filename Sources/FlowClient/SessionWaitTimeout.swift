import Foundation

/// A wait that ran out: what was expected, the view as it last was, and the last events, as a
/// readable diff.
public struct SessionWaitTimeout: Error, Sendable, CustomStringConvertible {
    public var expected: String
    public var timeout: Duration
    public var view: SessionView
    public var events: [SessionEvent]
    /// Expected-versus-actual lines, when the wait was for an `Expectation`.
    public var differences: [Expectation.Difference] = []

    public init(expected: String, timeout: Duration, view: SessionView, events: [SessionEvent], differences: [Expectation.Difference] = []) {
        self.expected = expected
        self.timeout = timeout
        self.view = view
        self.events = events
        self.differences = differences
    }

    public var description: String {
        var lines = ["session \(view.session): waited \(timeout) for \(expected), which did not happen"]
        if differences.isEmpty {
            lines.append("  actual: \(view.summary)")
        } else {
            let width = differences.map(\.field.count).max() ?? 0
            lines.append("  " + "".padding(toLength: width, withPad: " ", startingAt: 0) + "  expected | actual")
            for difference in differences {
                let mark = difference.matches ? " " : "✗"
                lines.append("\(mark) " + difference.field.padding(toLength: width, withPad: " ", startingAt: 0)
                             + "  \(difference.expected) | \(difference.actual)")
            }
        }
        if view.fencedValues > 0 { lines.append("  (\(view.fencedValues) values fenced off from older incarnations)") }
        lines.append("  last events:")
        lines.append(contentsOf: events.isEmpty ? ["    (none)"] : events.map { "    " + $0.line })
        return lines.joined(separator: "\n")
    }
}
