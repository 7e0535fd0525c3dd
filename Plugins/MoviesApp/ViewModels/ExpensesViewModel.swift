import FlowKit
import FlowProtocol
import Foundation

/// The expense report (Relatório de despesas, in Portuguese as its document): `appear` starts
/// a report if there is none, `adicionar` adds an expense, `registrar` submits the report and
/// starts a new one (notice "reportRegistered"). The report lives in `data`, so a restored
/// view model (`restore(state:data:)`) keeps it.
public final class ExpensesViewModel: ViewModel {
    override public class var screen: String { "expenses" }
    override public class var actions: [ActionSpec] {
        [ActionSpec("adicionar", label: "Adicionar", fields: ["titulo", "tipo", "valor"], clearsFields: true),
         ActionSpec("registrar", label: "Registrar")]
    }

    public static let tituloInvalido = "Título inválido"
    public static let tituloLongo = "Título muito longo: use no máximo \(FieldLimits.titulo) caracteres."
    public static let tipoInvalido = "Tipo de despesa inválido"
    public static let valorInvalido = "Valor inválido"
    public static let verifiqueOsDados = "Verifique os dados informados e tente novamente."
    public static let relatorioVazio = "O relatório não tem despesas com valor. Adicione ao menos uma despesa antes de registrar."
    public static let servicoIndisponivel = "Não foi possível registrar o relatório: o serviço de despesas não respondeu. Tente novamente em instantes."

    let expenses: any ExpenseService
    let clock: AppClock

    public init(session: String, expenses: any ExpenseService, clock: @escaping AppClock = { Date() }) {
        self.expenses = expenses
        self.clock = clock
        super.init(session: session)
    }

    /// The report on screen, if one was started.
    var report: Movies_V1_ExpenseReport? {
        if case .report(let report)? = screenData?.data { return report }
        return nil
    }

    override public func handle(_ intent: IntentInput) throws(IntentRefusal) {
        switch intent.action {
        case "appear": show(report ?? .empty(createdOn: clock()))
        case "adicionar": adicionar(intent)
        case "registrar": registrar()
        default: try super.handle(intent)
        }
    }

    func show(_ report: Movies_V1_ExpenseReport, notice: Notice? = nil) {
        var data = ScreenData()
        data.report = report
        state = .success(ScreenPayload(data, notice: notice))
    }

    func adicionar(_ intent: IntentInput) {
        let titulo = intent.field("titulo")
        if titulo.isEmpty { return fail(Self.tituloInvalido, field: "titulo") }
        if titulo.count > FieldLimits.titulo { return fail(Self.tituloLongo, field: "titulo") }
        guard let kind = ExpenseKind(rawValue: intent.field("tipo")) else { return fail(Self.tipoInvalido, field: "tipo") }
        // A decimal in Brazilian form, zero included (APP.md: "0,00" is a decimal; a report of
        // zero total cannot be registered, which is where zero is refused).
        guard intent.field("valor").count <= FieldLimits.valor, let centavos = BrazilianReais.centavos(from: intent.field("valor")) else {
            return fail(Self.valorInvalido, field: "valor")
        }
        var report = report ?? .empty(createdOn: clock())
        guard !report.totalCentavos.addingReportingOverflow(centavos).overflow else { return state = .error(Self.verifiqueOsDados) }
        report.add(titulo: titulo, kind: kind, centavos: centavos)
        show(report)
    }

    func registrar() {
        guard let report, report.totalCentavos > 0 else { return state = .error(Self.relatorioVazio) }
        state = .loading
        do {
            try expenses.submit(report, session: session)
            show(.empty(createdOn: clock()), notice: Notice("reportRegistered", Self.registrado(report)))
        } catch {
            switch error {
            case .refused(.emptyReport): state = .error(Self.relatorioVazio)
            case .refused: state = .error(Self.verifiqueOsDados)
            case .unavailable: state = .error(Self.servicoIndisponivel)
            }
        }
    }

    /// The confirmation of a registered report: which one, how many expenses, its total.
    static func registrado(_ report: Movies_V1_ExpenseReport) -> String {
        let count = report.expenses.count
        return "Relatório de \(report.criadoEm) registrado: \(count) despesa\(count == 1 ? "" : "s"), total \(report.totalTexto). Um novo relatório foi iniciado."
    }

    override public func disabledReason(for action: String) -> String? {
        guard action == "registrar", (report?.totalCentavos ?? 0) <= 0 else { return nil }
        return "adicione ao menos uma despesa com valor"
    }

    override public func presentation() -> Presentation {
        guard let report else { return Presentation([.muted("Carregando o relatório…")]) }
        return Presentation([
            .muted("Relatório de \(report.criadoEm) · \(report.expenses.count) despesa\(report.expenses.count == 1 ? "" : "s")"),
            .field("titulo", label: "Título", maxLength: FieldLimits.titulo),
            .field("tipo", label: "Tipo", kind: .choice, options: ExpenseKind.allCases.map { ($0.rawValue, $0.text) }),
            .field("valor", label: "Valor", kind: .number, maxLength: FieldLimits.valor, hint: "em reais, p. ex. 1.234,56"),
            .buttons("adicionar"),
            .collection("despesas", title: "Despesas", items: report.expenses.enumerated().map { index, expense in
                Flowbus_V1_Item(id: String(index), title: expense.titulo, subtitle: expense.tipoTexto, detail: expense.valorTexto)
            }, emptyText: "Nenhuma despesa ainda."),
            .summary("Total", report.totalTexto),
            .buttons("registrar"),
        ])
    }
}
