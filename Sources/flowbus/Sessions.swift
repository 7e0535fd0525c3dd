import ArgumentParser
import FlowClient
import Foundation

struct Sessions: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Lists the live sessions with their current screen, tab, modal, user and opening time."
    )

    @OptionGroup var global: GlobalOptions

    @Flag(name: .long, help: "Print the sessions as JSON.")
    var json = false

    func run() async throws {
        global.bootstrapLogging()
        let snapshot = try await BusSnapshot.take(try BusEndpoints.announced(by: global.runDirectory))
        if json {
            print(String(decoding: try JSONEncoder.cli.encode(snapshot.sessions), as: UTF8.self))
            return
        }
        guard !snapshot.sessions.isEmpty else {
            print("no live sessions; open one with `flowbus drive SCRIPT` (or a client)")
            return
        }
        var rows = [["SESSION", "SCREEN", "TAB", "MODAL", "STACK", "USER", "OPENED"]]
        for session in snapshot.sessions {
            rows.append([
                session.session, session.screen ?? "-", session.tab ?? "-", session.modal ?? "-",
                session.stack.joined(separator: ">"), session.user.isEmpty ? "-" : session.user,
                session.openedAt.map { StatusTable.duration(Date().timeIntervalSince($0)) + " ago" } ?? "-",
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
