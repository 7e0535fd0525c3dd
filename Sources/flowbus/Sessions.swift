import ArgumentParser
import FlowClient
import FlowHost
import Foundation

struct Sessions: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Lists the live sessions with their current screen, tab, modal, user, opening time and attached clients.",
        discussion: """
        CLIENTS counts the clients following a session: terminal clients (drivers and observers), \
        scripts, a `flowbus tap` of it; the host's plugins, which follow every session, are not counted.
        """
    )

    @OptionGroup var global: GlobalOptions

    @Flag(name: .long, help: "Print the sessions as JSON.")
    var json = false

    func run() async throws {
        global.bootstrapLogging()
        var sessions = try await BusSnapshot.take(try BusEndpoints.announced(by: global.runDirectory)).sessions
        // The host counts the clients; this tool's own look at the bus took no session's subtree.
        let clients = try? ControlClient(runDirectory: global.runDirectory, timeout: .seconds(2))
            .send(ControlRequest(command: .sessionClients), expecting: [String: Int].self)
        if let clients { for index in sessions.indices { sessions[index].clients = clients[sessions[index].session] ?? 0 } }
        if json {
            print(String(decoding: try JSONEncoder.cli.encode(sessions), as: UTF8.self))
            return
        }
        guard !sessions.isEmpty else {
            print("no live sessions; open one with `flowbus drive SCRIPT` (or a client)")
            return
        }
        var rows = [["SESSION", "SCREEN", "TAB", "MODAL", "STACK", "USER", "OPENED", "CLIENTS"]]
        for session in sessions {
            rows.append([
                session.session, session.screen ?? "-", session.tab ?? "-", session.modal ?? "-",
                session.stack.joined(separator: ">"), session.user.isEmpty ? "-" : session.user,
                session.openedAt.map { StatusTable.duration(Date().timeIntervalSince($0)) + " ago" } ?? "-",
                session.clients.map(String.init) ?? "?",
            ])
        }
        print(StatusTable.align(rows).joined(separator: "\n"))
    }
}

extension JSONEncoder {
    static var cli: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }
}
