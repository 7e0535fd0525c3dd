/// Durations as the manifest writes them: a whole number and a unit, `250ms`, `5s`, `2m`, `1h`.
public enum DurationText {
    public static let hint = "write a whole number followed by ms, s, m or h, such as 250ms, 5s, 2m or 1h"

    public static func parse(_ text: String) -> Duration? {
        let trimmed = text.trimmingWhitespace()
        let digits = trimmed.prefix(while: \.isASCIIDigit)
        guard !digits.isEmpty, digits.count <= 9, let value = Int64(digits) else { return nil }
        switch trimmed.dropFirst(digits.count) {
        case "ms": return .milliseconds(value)
        case "s": return .seconds(value)
        case "m": return .seconds(value * 60)
        case "h": return .seconds(value * 3600)
        default: return nil
        }
    }

    public static func format(_ duration: Duration) -> String {
        let milliseconds = duration.milliseconds
        if milliseconds != 0, milliseconds % 60_000 == 0 { return "\(milliseconds / 60_000)m" }
        if milliseconds != 0, milliseconds % 1000 == 0 { return "\(milliseconds / 1000)s" }
        return "\(milliseconds)ms"
    }
}

extension Duration {
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}

extension String {
    func trimmingWhitespace() -> Substring {
        let start = firstIndex { !$0.isWhitespace } ?? endIndex
        let end = lastIndex { !$0.isWhitespace }.map { index(after: $0) } ?? start
        return self[start..<end]
    }
}
