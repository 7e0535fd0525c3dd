import ArgumentParser
import FlowClient
import Foundation

struct Drive: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Plays a YAML script against the app: opens a session, sends intents, waits for screens and states.",
        discussion: """
        A script is a list of steps:
          - open: {}                  # a new session (or: - attach: SESSION)
          - expect: {screen: cart}    # also tab, stack, modal, phase, message,
                                      # notice, state, user, coordinators, data,
                                      # timeout
          - send: {action: checkout, fields: {coupon: SPRING}}
          - call: {service: svc.mail, method: outbox,
                   args: {email: "new-${unique}@x.dev"}, save: {token: token}}
          - send: {action: verify, fields: {token: "${token}"}}
          - close

        data checks values in the state's data by dotted path over its JSON form, e.g.
          - expect: {screen: cart,
                     data: {cart.paid: false, cart.items: 3, cart.items.*.id: item:19}}

        (a number segment indexes a list, * is any element, a list compares by its length).
        Each expect waits up to --timeout (per step: timeout: 10). On the first failure it prints the \
        expected and actual screen, stack, tab, modal, phase and message and the last events, and exits 1.
        """
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The script file (YAML).")
    var script: String

    @Flag(name: .long, help: "Print the result as JSON.")
    var json = false

    @Option(name: .long, help: "Seconds each step may wait unless it says otherwise.")
    var timeout: Double = 5

    @Option(name: .customLong("var"), help: "Sets ${NAME} in the script (NAME=VALUE); repeatable.")
    var variables: [String] = []

    func validate() throws {
        guard timeout > 0 else { throw ValidationError("--timeout must be more than 0 seconds") }
        for variable in variables where !variable.contains("=") {
            throw ValidationError("--var \(variable) has no value; write --var NAME=VALUE")
        }
    }

    func run() async throws {
        global.bootstrapLogging()
        let parsed = try DriveScript.load(path: script)
        let endpoints = try BusEndpoints.announced(by: global.runDirectory)
        var values: [String: String] = [:]
        for variable in variables {
            let parts = variable.split(separator: "=", maxSplits: 1)
            values[String(parts[0])] = parts.count > 1 ? String(parts[1]) : ""
        }
        var options = SessionClientOptions()
        options.name = "drive/\(getpid())"
        let journey = Journey(endpoints: endpoints, options: options, variables: values, defaultTimeout: .milliseconds(Int64(timeout * 1000)))
        let report = await journey.run(parsed) { step in
            guard !json else { return }
            let time = String(format: "%6.0f ms", step.milliseconds)
            print("\(step.passed ? "✓" : "✗") \(String(step.number).leftPadded(3)) \(time)  \(step.summary)")
            if let failure = step.failure { print("\n" + failure) }
        }
        journey.stop()
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try encoder.encode(report), as: UTF8.self))
        } else {
            let count = report.steps.count
            print(report.passed
                  ? "\nall \(count) steps passed, session \(report.session ?? "-")"
                  : "\nfailed at step \(count) of \(parsed.steps.count), session \(report.session ?? "-")")
        }
        if !report.passed { throw ExitCode(1) }
    }
}

extension String {
    func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
