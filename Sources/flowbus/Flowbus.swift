import ArgumentParser
import Foundation
import FlowHost

@main
enum Entry {
    static func main() async {
        // `flowbus up` in the foreground turns stop signals into a request as early as possible:
        // one that arrives while the host starts must stop it cleanly, not kill it.
        let arguments = CommandLine.arguments.dropFirst()
        if let problem = Flowbus.unknownCommand(arguments.first) {
            FileHandle.standardError.write(Data((problem + "\n").utf8))
            exit(64)
        }
        if arguments.first == "up", !arguments.contains("--detach") {
            StopSignals.install()
        }
        await Flowbus.main()
    }
}

extension Flowbus {
    /// The commands, as typed.
    static var commandNames: [String] { configuration.subcommands.map { $0._commandName } }

    /// What to say when the first word is no command (ArgumentParser would complain about the
    /// options after it instead, `Unknown option '--run-dir'`); nil when it is one, or an option.
    static func unknownCommand(_ word: String?) -> String? {
        guard let word, !word.hasPrefix("-"), word != "help", !commandNames.contains(word) else { return nil }
        let close = commandNames.filter { $0.hasPrefix(String(word.prefix(2))) }
        let guess = close.count == 1 ? " Did you mean `flowbus \(close[0])`?" : ""
        return "flowbus: '\(word)' is not a flowbus command.\(guess) The commands are: \(commandNames.joined(separator: ", ")); `flowbus --help` says what each does, `flowbus COMMAND --help` its options."
    }
}

struct Flowbus: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "flowbus",
        abstract: "Runs an MVVM-C app's coordinators and view models as processes on a ZeroMQ bus.",
        discussion: """
        `flowbus up` starts the host (Majordomo broker, Clone server, supervised plugins); \
        `flowbus ps` shows it; `flowbus down` stops it. See README.md for the whole reference.
        """,
        subcommands: [Up.self, Ps.self, Down.self, Tap.self, Keys.self, Fault.self, Chaos.self, Sim.self, SimAgentCommand.self, Drive.self, Sessions.self, Call.self, Trace.self, Client.self, Demo.self]
    )
}
