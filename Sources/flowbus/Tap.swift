import ArgumentParser
import Clone
import FlowHost
import FlowProtocol
import Foundation
import Logging
import Majordomo
import ZeroMQ

struct Tap: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Prints Clone updates under a subtree and a summary of MDP traffic, as they happen.",
        discussion: """
        Sessions' navigation and view states are decoded (the app's payload through the schema it \
        publishes); the traffic line fits 80 columns. Example: `flowbus tap /s/` follows every \
        session; `flowbus tap --json` prints one JSON object a line, each value whole. Ctrl-C stops.
        """
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The Clone subtree to follow, e.g. /s/ or /demo/; empty follows everything.")
    var subtree: String = ""

    @Flag(name: .long, help: "One JSON object a line instead of text.")
    var json = false

    @Option(name: .long, help: "Seconds between MDP traffic summaries.")
    var every: Double = 1

    @Option(name: .long, help: "Stop after this many seconds (default: until Ctrl-C).")
    var duration: Double?

    func validate() throws {
        if !subtree.isEmpty, !(subtree.hasPrefix("/") && subtree.hasSuffix("/")) {
            throw ValidationError("a subtree starts and ends with a slash, like /s/ or /demo/echo/; got \(subtree)")
        }
        guard every > 0 else { throw ValidationError("--every must be more than 0 seconds") }
    }

    func run() async throws {
        global.bootstrapLogging()
        let directory = global.runDirectory
        let descriptor = try directory.requireLiveHost()
        let context = try ZMQContext()
        // The apps' schemas too, to read the states' payloads (only the subtree is printed).
        let covered = subtree.isEmpty || AppSchema.keyPrefix.hasPrefix(subtree)
        var configuration = CloneAgentConfiguration(subtrees: covered ? [subtree] : [subtree, AppSchema.keyPrefix])
        if let server = descriptor.serverPublicKey {
            throw ValidationError("the host runs with CURVE (server key \(server)); tap needs a client key on its allow-list, which is not supported yet: run tap on the host with ipc endpoints")
        }
        configuration.serverTimeout = .seconds(5)
        let agent = try CloneAgent(
            context: context,
            endpoints: CloneEndpoints(
                snapshot: descriptor.endpoints.cloneSnapshot, publisher: descriptor.endpoints.clonePublisher,
                collector: descriptor.endpoints.cloneCollector),
            configuration: configuration, logger: Logger(label: "flowbus.tap"))
        defer { agent.stop() }
        let printer = TapPrinter(json: json) { [agent] package in
            let key = AppSchema.keyPrefix + package
            return agent.get(key).flatMap { AppSchema.published(key: key, value: $0.value) }
        }
        let control = ControlClient(runDirectory: directory, timeout: .seconds(2))

        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for await update in agent.updates(prefix: subtree) {
                    printer.print(update)
                }
            }
            group.addTask {
                var previous: BrokerStatistics?
                while !Task.isCancelled {
                    try await Task.sleep(for: .seconds(every))
                    guard let status: HostStatus = try? control.send(ControlRequest(command: .status)) else {
                        printer.note("the host does not answer; is it still running? (`flowbus ps`)")
                        continue
                    }
                    printer.print(traffic: status, since: previous)
                    previous = status.broker
                }
            }
            if let duration {
                group.addTask { try await Task.sleep(for: .seconds(duration)) }
                try await group.next()
                group.cancelAll()
                agent.stop()
            } else {
                try await group.next()
            }
        }
    }
}
