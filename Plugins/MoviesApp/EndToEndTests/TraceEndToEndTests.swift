import FlowbusTesting
import FlowClient
import FlowHost
import Foundation
import Testing

/// `flowbus trace` against the whole app: a client signs in with the demo account through
/// FlowClient's Journey, the session is closed, and only then the real `flowbus trace` binary
/// reads the host's recorded history of it.
@Suite("flowbus trace end to end", .serialized)
struct TraceEndToEndTests {
    @Test("a signed-in session's intents, replies, states and navigation, as text, JSON and Mermaid", .timeLimit(.minutes(3)))
    func signInTimeline() async throws {
        let host = try await AppJourneysEndToEndTests.startApp()
        defer { Task { try? await host.stop() } }
        let journey = try AppJourneysEndToEndTests.journey(on: host)
        let client = try await journey.open()
        let session = client.session
        let clientName = client.options.name
        try await journey.expect(Expectation(screen: "signin"))
        try await journey.send("logIn", fields: ["email": "demo@flowbus.dev", "password": "flowbus123"])
        try await journey.expect(Expectation(screen: "home", phase: .success))
        try await journey.close()
        journey.stop()

        // Structured: the JSON the host answered, once the close has run its course: closing sends
        // each view model `close`, whose deletes of the session's states arrive a moment later.
        var json = try await host.run(["trace", session, "--json"])
        let settled = try await HostFixture.eventually(timeout: .seconds(10), every: .milliseconds(200)) {
            json = try await host.run(["trace", session, "--json"])
            guard json.status == 0, let trace = try? JSONDecoder().decode(SessionTrace.self, from: Data(json.output.utf8)) else { return false }
            let stateKeys = Set(trace.events.filter { $0.kind == .state }.compactMap(\.key))
            let deleted = Set(trace.events.filter { $0.kind == .deleted }.compactMap(\.key))
            return stateKeys.filter { $0.hasPrefix("/s/") }.isSubset(of: deleted)
        }
        #expect(settled, "the closed session's states were not all deleted:\n\(json.output)")
        try #require(json.status == 0, "flowbus trace --json failed:\n\(json.output)")
        let trace = try JSONDecoder().decode(SessionTrace.self, from: Data(json.output.utf8))
        let events = trace.events
        // A process writes as `<plugin>/<replica>` (vm-signin/0).
        let by = { (event: TraceEvent, plugin: String) in event.from.hasPrefix(plugin + "/") }
        #expect(trace.session == session && trace.closed)
        let open = events.firstIndex { $0.kind == .call && $0.action == "openSession" && $0.from == clientName }
        let logIn = events.firstIndex { $0.kind == .intent && $0.action == "logIn" && $0.service == "vm.signin" && $0.from == clientName }
        let reply = events.firstIndex { $0.kind == .reply && $0.action == "logIn" && $0.to == clientName }
        let loading = events.firstIndex { $0.kind == .state && $0.screen == "signin" && $0.phase == "loading" && by($0, "vm-signin") }
        let success = events.firstIndex { $0.kind == .state && $0.screen == "signin" && $0.phase == "success" && by($0, "vm-signin") }
        let home = events.firstIndex { $0.kind == .navigation && $0.top == "home" && by($0, "coord-app") }
        let summary = TraceTimeline.text(trace)
        let (o, i, r, l, s, h) = (try #require(open, "\(summary)"), try #require(logIn, "\(summary)"), try #require(reply, "\(summary)"),
                                  try #require(loading, "\(summary)"), try #require(success, "\(summary)"), try #require(home, "\(summary)"))
        #expect(o < i && i < l && l < s && s < h && i < r, "out of order:\n\(summary)")
        #expect(events[r].applied == true && by(events[r], "vm-signin") && events[r].worker?.hasPrefix("vm-signin/") == true)
        #expect(events[r].idempotencyKey == events[i].idempotencyKey)
        // Clone changes carry their sequences, increasing.
        let sequences = events.compactMap(\.sequence)
        #expect(!sequences.isEmpty && sequences == sequences.sorted(), "\(sequences)")
        #expect(events.contains { $0.kind == .deleted && $0.key == "/s/\(session)/meta" })

        // Text: one line per event, in the same order.
        let text = try await host.run(["trace", session])
        try #require(text.status == 0, "flowbus trace failed:\n\(text.output)")
        let lines = text.output.split(separator: "\n").map(String.init)
        #expect(lines.first == "session \(session): \(events.count) events, closed")
        #expect(lines.count == events.count + 1, "\(text.output)")
        let lineOf = { (needle: String) in lines.firstIndex { $0.contains(needle) } }
        let textIntent = lineOf("\(clientName) → vm.signin") ?? -1
        let textLoading = lineOf("state loading") ?? -1
        let textReply = lineOf("reply logIn applied") ?? -1
        let textHome = lines.firstIndex { $0.contains("coord-app/0 ⇒ nav") && $0.contains("top home") } ?? -1
        #expect(textIntent > 0 && textIntent < textLoading && textLoading < textHome && textIntent < textReply, "\(text.output)")
        #expect(lines[textReply].contains("vm-signin/"), "the reply names the worker that served it")

        // Mermaid: written to a file, participants and arrows.
        let file = host.runDirectory + "/trace.mmd"
        let drawn = try await host.run(["trace", session, "--mermaid", file])
        try #require(drawn.status == 0, "\(drawn.output)")
        #expect(drawn.output.contains("wrote a Mermaid sequence diagram of \(events.count) events to \(file)"))
        let diagram = try String(contentsOfFile: file, encoding: .utf8)
        let rows = diagram.split(separator: "\n").map(String.init)
        #expect(rows.first?.hasPrefix("%% flowbus trace \(session)") == true && rows.dropFirst().first == "sequenceDiagram")
        func participant(_ name: String) -> String? {
            rows.first { $0.hasPrefix("    participant ") && $0.hasSuffix(" as \(name)") }?.split(separator: " ")[1].description
        }
        let me = try #require(participant(clientName), "\(diagram)")
        let signIn = try #require(participant(events[l].from), "\(diagram)")
        let app = try #require(participant(events[h].from), "\(diagram)")
        #expect(rows.contains { $0.hasPrefix("    participant Clone as Clone /s/\(session)/") })
        let arrowLogIn = rows.firstIndex { $0 == "    \(me)->>\(signIn): logIn (vm.signin on v\(events[i].version ?? 0))" }
        let arrowReply = rows.firstIndex { $0.hasPrefix("    \(signIn)-->>\(me): logIn applied") }
        let arrowHome = rows.firstIndex { $0.hasPrefix("    \(app)->>Clone: ") && $0.contains("nav v") && $0.contains("[home]") }
        #expect(arrowLogIn != nil && arrowReply != nil && arrowHome != nil, "\(diagram)")
        if let arrowLogIn, let arrowReply, let arrowHome { #expect(arrowLogIn < arrowReply && arrowLogIn < arrowHome, "\(diagram)") }

        // A session the host never saw: a clear error, a non-zero exit.
        let unknown = try await host.run(["trace", "no-such-session"])
        #expect(unknown.status != 0)
        #expect(unknown.output.contains("no-such-session") && unknown.output.contains("flowbus sessions"), "\(unknown.output)")
    }

    @Test("a host started with --history-sessions 0 records nothing and says so", .timeLimit(.minutes(1)))
    func historyOff() async throws {
        let host = try await HostFixture.start(manifest: echoManifest([("echo", 1)]), arguments: ["--history-sessions", "0"])
        defer { Task { try? await host.stop() } }
        let traced = try await host.run(["trace", "any-session"])
        #expect(traced.status != 0)
        #expect(traced.output.contains("keeps no session history") && traced.output.contains("--history-sessions"), "\(traced.output)")
        let refused = try await host.run(["up", "--history-sessions", "2000000"])
        #expect(refused.status != 0)
        #expect(refused.output.contains("--history-sessions must be from 0"), "\(refused.output)")
    }
}
