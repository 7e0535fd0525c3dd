import ArgumentParser
import Foundation
import FlowHost

@main
enum Entry {
    static func main() async {
        // `flowbus up` in the foreground turns stop signals into a request as early as possible:
        // one that arrives while the host starts must stop it cleanly, not kill it.
        let arguments: [String]
        switch Flowbus.commandLine(Array(CommandLine.arguments.dropFirst())) {
        case .success(let ordered): arguments = ordered
        case .failure(let problem):
            FileHandle.standardError.write(Data((problem.description + "\n").utf8))
            exit(64)
        }
        if arguments.first == "up", !arguments.contains("--detach") {
            StopSignals.install()
        }
        await Flowbus.main(arguments)
    }
}

/// A word where a command was expected that names none.
struct UnknownCommand: Error, CustomStringConvertible {
    var description: String
}

extension Flowbus {
    /// The commands, as typed.
    static var commandNames: [String] { configuration.subcommands.map { $0._commandName } }

    /// The options every command takes, which a person may also type before the command.
    static let globalOptions: Set<String> = ["--run-dir", "--log-level"]

    /// The arguments as the parser wants them, or what to say when a word where a command (or a
    /// command of a group, `fault drop`) belongs names none: ArgumentParser would complain about
    /// the options after it instead (`Unknown option '--run-dir'`). Global options typed before
    /// the command (`flowbus --run-dir D ps`) are moved after it.
    static func commandLine(_ arguments: [String]) -> Result<[String], UnknownCommand> {
        var rest = arguments[...]
        var leading: [String] = []
        while let first = rest.first, globalOptions.contains(where: { first == $0 || first.hasPrefix($0 + "=") }) {
            let takesNext = globalOptions.contains(first) && rest.count > 1
            leading += rest.prefix(takesNext ? 2 : 1)
            rest = rest.dropFirst(takesNext ? 2 : 1)
        }
        var path: [String] = []
        var group: any ParsableCommand.Type = Flowbus.self
        while !group.configuration.subcommands.isEmpty, let word = rest.first, !word.hasPrefix("-"), word != "help" {
            let names = group.configuration.subcommands.map { $0._commandName }
            guard let index = names.firstIndex(of: word) else {
                return .failure(unknownCommand(word, in: ["flowbus"] + path, names: names))
            }
            path.append(word)
            group = group.configuration.subcommands[index]
            rest = rest.dropFirst()
        }
        return .success(path + leading + rest)
    }

    static func unknownCommand(_ word: String, in path: [String], names: [String]) -> UnknownCommand {
        let command = path.joined(separator: " ")
        let close = names.filter { $0.hasPrefix(String(word.prefix(2))) }
        let guess = close.count == 1 ? " Did you mean `\(command) \(close[0])`?" : ""
        let what = path.count == 1 ? "a flowbus command" : "a command of `\(command)`"
        return UnknownCommand(description: "\(command): '\(word)' is not \(what).\(guess) The commands are: \(names.joined(separator: ", ")); `\(command) --help` says what each does, `\(command) COMMAND --help` its options.")
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
