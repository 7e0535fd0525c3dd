import FlowProtocol
import Foundation

/// An expense type of the report ("tipo"): typed as 1 or 2 on the form.
public enum ExpenseKind: String, Sendable, CaseIterable {
    case eletronicos = "1"
    case escritorio = "2"

    public var text: String {
        switch self {
        case .eletronicos: "Eletrônicos"
        case .escritorio: "Escritório"
        }
    }
}

extension Movies_V1_ExpenseReport {
    /// An empty report created on `date`, shown in Brasília time as dd/MM/yyyy.
    public static func empty(id: String = UUID().uuidString, createdOn date: Date) -> Movies_V1_ExpenseReport {
        var report = Movies_V1_ExpenseReport()
        report.id = id
        report.criadoEm = brazilianDate(date)
        report.totalTexto = BrazilianReais.format(centavos: 0)
        report.podeRegistrar = false
        return report
    }

    /// Adds one expense and updates the total, its text and whether `registrar` is enabled.
    public mutating func add(titulo: String, kind: ExpenseKind, centavos: Int64) {
        var expense = Movies_V1_Expense()
        expense.titulo = titulo
        expense.tipo = kind.rawValue
        expense.tipoTexto = kind.text
        expense.valorCentavos = centavos
        expense.valorTexto = BrazilianReais.format(centavos: centavos)
        expenses.append(expense)
        totalCentavos += centavos
        totalTexto = BrazilianReais.format(centavos: totalCentavos)
        podeRegistrar = totalCentavos > 0
    }

    /// dd/MM/yyyy in the São Paulo time zone, whatever the machine's locale and zone.
    public static func brazilianDate(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "America/Sao_Paulo") ?? TimeZone(secondsFromGMT: -3 * 3600)!
        let parts = calendar.dateComponents([.day, .month, .year], from: date)
        func twoDigits(_ value: Int?) -> String { let value = value ?? 0; return value < 10 ? "0\(value)" : "\(value)" }
        return "\(twoDigits(parts.day))/\(twoDigits(parts.month))/\(parts.year ?? 0)"
    }
}
