/// Amounts in Brazilian reais as people type and read them ("1.234,56", "R$ 1.234,56"), in
/// centavos, independent of the machine's locale.
public enum BrazilianReais {
    /// At most this many integer digits are read, so totals stay far from Int64's limit.
    static let maximumIntegerDigits = 12

    /// Parses "100,00", "1.234,56", "10" or "R$ 10,5" into centavos; nil for anything else
    /// ("abc", "1,2,3", "10.50", more than two decimals). Signs are not accepted.
    public static func centavos(from text: String) -> Int64? {
        var text = Substring(text.trimmingWhitespace)
        if text.hasPrefix("R$") { text = Substring(text.dropFirst(2).trimmingWhitespace) }
        let halves = text.split(separator: ",", omittingEmptySubsequences: false)
        guard halves.count <= 2 else { return nil }
        guard let reais = integerPart(halves[0]) else { return nil }
        var cents: Int64 = 0
        if halves.count == 2 {
            let fraction = halves[1]
            guard (1...2).contains(fraction.count), fraction.allSatisfy(\.isASCIIDigit) else { return nil }
            cents = Int64(fraction)! * (fraction.count == 1 ? 10 : 1)
        }
        return reais * 100 + cents
    }

    /// Digits, optionally grouped by thousands with dots ("1.234.567").
    static func integerPart(_ text: Substring) -> Int64? {
        let groups = text.split(separator: ".", omittingEmptySubsequences: false)
        guard let first = groups.first, (1...(groups.count == 1 ? maximumIntegerDigits : 3)).contains(first.count) else { return nil }
        guard groups.dropFirst().allSatisfy({ $0.count == 3 }) else { return nil }
        let digits = groups.joined()
        guard digits.count <= maximumIntegerDigits, digits.allSatisfy(\.isASCIIDigit) else { return nil }
        return Int64(digits)
    }

    /// "R$ 1.234,56"; "R$ 0,00" for zero; "-R$ 5,00" below zero.
    public static func format(centavos: Int64) -> String {
        let magnitude = centavos.magnitude
        let reais = String(magnitude / 100)
        let cents = magnitude % 100
        var grouped = ""
        for (index, digit) in reais.enumerated() {
            if index > 0 && (reais.count - index) % 3 == 0 { grouped.append(".") }
            grouped.append(digit)
        }
        return (centavos < 0 ? "-" : "") + "R$ \(grouped),\(cents < 10 ? "0" : "")\(cents)"
    }
}

extension Character {
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}

extension StringProtocol {
    /// The text without the whitespace at either end (by Unicode scalar: a view model trims
    /// every parameter and field it reads, so this is on the path of each intent).
    var trimmingWhitespace: String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
              let last = scalars.lastIndex(where: { !$0.properties.isWhitespace }) else { return "" }
        var trimmed = String.UnicodeScalarView()
        trimmed.append(contentsOf: scalars[first...last])
        return String(trimmed)
    }
}
