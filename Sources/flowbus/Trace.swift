import ArgumentParser
import FlowHost
import Foundation

struct Trace: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Prints a session's timeline (intents, replies, states, navigation, and which process did each), from the host's history.",
        discussion: """
        The host records every intent and call to vm.* and coord.* services with its reply and the \
        worker that served it, and every Clone change under /s/<session>/, from the moment it \
        starts; so a session that ran before this command can be traced. It keeps the last 2,000 \
        events of each of its last 4,096 sessions (at most 100,000 events in all). `--mermaid \
        FILE` also writes a Mermaid sequenceDiagram (paste it into a Markdown file, or \
        https://mermaid.live).
        """
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The session id (`flowbus sessions` lists the live ones).")
    var session: String

    @Option(name: .long, help: "Also write the timeline as a Mermaid sequence diagram to this file.")
    var mermaid: String?

    @Flag(name: .long, help: "Print the recorded events as JSON instead of text.")
    var json = false

    func validate() throws {
        guard !session.isEmpty else {
            throw ValidationError("give a session id: `flowbus trace SESSION` (`flowbus sessions` lists the live ones)")
        }
    }

    func run() throws {
        global.bootstrapLogging()
        let trace: SessionTrace = try ControlClient(runDirectory: global.runDirectory, timeout: .seconds(10))
            .send(ControlRequest(command: .trace, session: session))
        if let mermaid {
            let url = URL(fileURLWithPath: mermaid)
            do {
                try Data(MermaidSequence.diagram(trace).utf8).write(to: url, options: .atomic)
            } catch {
                throw TraceFileError(path: url.path, reason: error.localizedDescription)
            }
        }
        if json {
            print(String(decoding: try JSONEncoder.cli.encode(trace), as: UTF8.self))
        } else {
            print(TraceTimeline.text(trace))
        }
        if let mermaid, !json {
            print("wrote a Mermaid sequence diagram of \(trace.events.count) events to \(mermaid)")
        }
    }
}

/// The diagram file could not be written.
struct TraceFileError: Error, CustomStringConvertible {
    var path: String
    var reason: String

    var description: String {
        "cannot write the Mermaid diagram to \(path): \(reason); pass a writable file path to --mermaid"
    }
}
