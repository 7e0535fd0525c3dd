import FlowbusTesting
import Foundation
import Testing

/// `flowbus client` refuses a bad option before it reaches anything, saying what is wrong with it.
@Suite("Client options")
struct ClientOptionsTests {
    @Test("--size says which of rows and columns is wrong, and notices them swapped",
          arguments: [
              ("80x24", ["24 columns wide", "at least 30", "did you mean 24x80?"]),
              ("24by80", ["is not ROWSxCOLUMNS", "24x80"]),
              ("5x80", ["5 rows tall", "at least 8"]),
          ])
    func sizeProblemsAreNamed(size: String, expected: [String]) async throws {
        let flowbus = try #require(FlowbusProcesses.flowbusExecutable())
        let run = try await FlowbusProcesses.run(flowbus, ["client", "--script", "/nonexistent.yaml", "--size", size, "--run-dir", "/tmp/fbc-none"])
        #expect(run.status != 0)
        for text in expected { #expect(run.output.contains(text), "\(run.output)") }
    }

    /// A mistyped command is named as such, with the commands there are (issue 17: it used to
    /// say "Unknown option '--run-dir'", about the options after it).
    @Test func anUnknownCommandIsNamed() async throws {
        let flowbus = try #require(FlowbusProcesses.flowbusExecutable())
        let bogus = try await FlowbusProcesses.run(flowbus, ["bogus", "--run-dir", "/tmp/fbc-none"])
        #expect(bogus.status == 64)
        #expect(bogus.output.contains("'bogus' is not a flowbus command"), "\(bogus.output)")
        #expect(bogus.output.contains("up, ps, down"), "\(bogus.output)")
        #expect(!bogus.output.contains("Unknown option"), "\(bogus.output)")
        let typo = try await FlowbusProcesses.run(flowbus, ["sesions"])
        #expect(typo.output.contains("Did you mean `flowbus sessions`?"), "\(typo.output)")
        // Before the command, and in a group of commands, alike.
        let before = try await FlowbusProcesses.run(flowbus, ["--run-dir", "/tmp/fbc-none", "bogus"])
        #expect(before.status == 64 && before.output.contains("'bogus' is not a flowbus command"), "\(before.output)")
        let nested = try await FlowbusProcesses.run(flowbus, ["fault", "bogus", "--run-dir", "/tmp/fbc-none"])
        #expect(nested.status == 64 && nested.output.contains("'bogus' is not a command of `flowbus fault`"), "\(nested.output)")
        #expect(nested.output.contains("drop, delay") && !nested.output.contains("Unknown option"), "\(nested.output)")
        let chaos = try await FlowbusProcesses.run(flowbus, ["chaos", "chek"])
        #expect(chaos.output.contains("Did you mean `flowbus chaos check`?"), "\(chaos.output)")
        // Global options before the command reach it.
        let ps = try await FlowbusProcesses.run(flowbus, ["--run-dir", "/tmp/fbc-none", "ps"])
        #expect(ps.output.contains("no flowbus host is running in /tmp/fbc-none"), "\(ps.output)")
        // Commands and options still reach the parser.
        let help = try await FlowbusProcesses.run(flowbus, ["--help"])
        #expect(help.status == 0 && help.output.contains("SUBCOMMANDS"), "\(help.output)")
    }

    /// Help text is wrapped by the terminal's width only: a paragraph written with line breaks in
    /// the source came out broken mid-sentence ("attaches a second driver to a" / "session"), and
    /// an example line wider than 80 columns spilled its end onto a line of its own. Every command
    /// the help lists, nested ones too, at the 80 columns help gets when it is not a terminal.
    @Test func helpParagraphsAreNotBrokenMidSentence() async throws {
        let flowbus = try #require(FlowbusProcesses.flowbusExecutable())
        // Each command's help is asked for once: to list its subcommands, then to be checked.
        var helps: [[String]: String] = [:]
        func help(_ command: [String]) async throws -> String {
            if let known = helps[command] { return known }
            let text = try await FlowbusProcesses.run(flowbus, command + ["--help"]).output
            helps[command] = text
            return text
        }
        func subcommands(_ command: [String]) async throws -> [String] {
            guard let listed = try await help(command).components(separatedBy: "SUBCOMMANDS:").dropFirst().first else { return [] }
            return listed.components(separatedBy: "\n").compactMap { line in
                guard line.hasPrefix("  "), let first = line.dropFirst(2).first, first.isLetter else { return nil }
                return line.dropFirst(2).split(separator: " ").first.map(String.init)
            }
        }
        var commands: [[String]] = [[]]
        for name in try await subcommands([]) {
            commands.append([name])
            for nested in try await subcommands([name]) { commands.append([name, nested]) }
        }
        #expect(commands.count > 20, "the help listed only \(commands)")
        for command in commands {
            let prose = try await help(command).components(separatedBy: "USAGE:")[0].components(separatedBy: "\n")
            let name = (["flowbus"] + command).joined(separator: " ")
            for (line, next) in zip(prose, prose.dropFirst()) {
                let continues = !next.isEmpty && !next.hasPrefix(" ")
                // Indented lines are examples, laid out by hand to fit: what follows one is
                // another, or a blank line.
                if line.hasPrefix("  ") {
                    #expect(!continues, "an example wider than 80 columns in `\(name) --help`: '\(line)' / '\(next)'")
                    continue
                }
                let ends = line.trimmingCharacters(in: .whitespaces).last.map { ".:;)?`".contains($0) } ?? true
                #expect(line.count >= 50 || ends || !continues, "a line broken mid-sentence in `\(name) --help`: '\(line)' / '\(next)'")
            }
        }
    }
}
