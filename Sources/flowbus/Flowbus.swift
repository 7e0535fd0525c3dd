import ArgumentParser
import FlowHost

@main
enum Entry {
    static func main() async {
        // `flowbus up` in the foreground turns stop signals into a request as early as possible:
        // one that arrives while the host starts must stop it cleanly, not kill it.
        let arguments = CommandLine.arguments.dropFirst()
        if arguments.first == "up", !arguments.contains("--detach") {
            StopSignals.install()
        }
        await Flowbus.main()
    }
}

struct Flowbus: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "flowbus",
        abstract: "Runs an MVVM-C app's coordinators and view models as processes on a ZeroMQ bus.",
        discussion: """
        `flowbus up` starts the host (Majordomo broker, Clone server, supervised plugins);
        `flowbus ps` shows it; `flowbus down` stops it. See README.md for the whole reference.
        """,
        subcommands: [Up.self, Ps.self, Down.self, Tap.self, Keys.self, Fault.self, Chaos.self, Drive.self, Sessions.self, Call.self, Trace.self, Client.self, Demo.self]
    )
}
