import FlowClient
import FlowTerminal
import Foundation

/// `flowbus client --script`: a drive script whose `keys` and `see` steps play the terminal
/// client on a virtual screen; opens (or attaches to) the session first unless the script does.
struct ClientScriptRunner {
    var endpoints: BusEndpoints
    var rows: Int
    var columns: Int

    func run(_ script: DriveScript, session: String?, observe: Bool, output: (String) -> Void) async -> Bool {
        var script = script
        if let first = script.steps.first?.step, !Self.opens(first) {
            let step: DriveStep = session.map { .attach(session: $0, observe: observe) } ?? .open(session: nil)
            script.steps.insert(ScriptStep(number: 0, step: step), at: 0)
        }
        var options = SessionClientOptions()
        options.name = "script/\(getpid())"
        let journey = Journey(endpoints: endpoints, options: options)
        let terminal = ScriptedTerminal(rows: rows, columns: columns)
        journey.terminal = terminal
        let report = await journey.run(script) { step in
            let time = String(format: "%6.0f ms", step.milliseconds)
            output("\(step.passed ? "✓" : "✗") \(String(step.number).leftPadded(3)) \(time)  \(step.summary)")
            if let failure = step.failure { output("\n" + failure) }
        }
        journey.stop()
        output(report.passed
               ? "\nall \(report.steps.count) steps passed, session \(report.session ?? "-")"
               : "\nfailed at step \(report.steps.last?.number ?? 0), session \(report.session ?? "-")")
        return report.passed
    }

    static func opens(_ step: DriveStep) -> Bool {
        switch step {
        case .open, .attach: true
        default: false
        }
    }
}
