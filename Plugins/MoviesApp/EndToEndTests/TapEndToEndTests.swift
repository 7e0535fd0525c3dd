import FlowbusTesting
import FlowClient
import Foundation
import Testing

/// `flowbus tap` against the whole app (issue 17: it printed only each value's type and size,
/// even with --json, and its traffic line ran past 200 columns).
@Suite("flowbus tap end to end", .serialized)
struct TapEndToEndTests {
    @Test("a session's navigation and states decoded, as text and JSON; the traffic line fits 80 columns", .timeLimit(.minutes(3)))
    func decodedNavigationAndStates() async throws {
        let host = try await AppJourneysEndToEndTests.startApp()
        defer { Task { try? await host.stop() } }
        let journey = try AppJourneysEndToEndTests.journey(on: host)
        defer { journey.stop() }
        let client = try await journey.open()
        try await journey.expect(Expectation(screen: "signin"))
        let subtree = "/s/\(client.session)/"
        // Live updates carry properties ([sprev=…]) between the key and the value.
        // Tap follows the session while it signs in, a mistake first.
        async let tapped = host.run(["tap", subtree, "--duration", "5"])
        try await Task.sleep(for: .seconds(1.5))
        try await journey.send("logIn", fields: ["email": "demo@flowbus.dev", "password": ""])
        try await journey.expect(Expectation(screen: "signin", phase: .error))
        try await journey.send("logIn", fields: ["email": "demo@flowbus.dev", "password": "flowbus123"])
        try await journey.expect(Expectation(screen: "home", phase: .success))

        let text = try await tapped
        #expect(text.status == 0, "\(text.output)")
        let lines = text.output.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.contains("\(subtree)vm/signin ") && $0.contains("state error v") && $0.contains("\"Enter your password.\" (field password)") },
                "\(text.output)")
        #expect(lines.contains { $0.contains("\(subtree)nav ") && $0.contains(" nav v") && $0.contains("tabs home* likes settings expenses · stack home") },
                "\(text.output)")
        #expect(lines.contains { $0.contains("\(subtree)vm/signin ") && $0.contains("state success v") && $0.contains("notice signedIn") && $0.contains("demo@flowbus.dev") },
                "\(text.output)")
        #expect(lines.contains { $0.contains("\(subtree)vm/home ") && $0.contains("state success v") && $0.contains("\"carousels\"") }, "\(text.output)")
        #expect(lines.contains { $0.contains("\(subtree)meta ") && $0.contains("record open · flow main · user demo@flowbus.dev") }, "\(text.output)")
        #expect(!lines.contains { $0.contains("bytes, writer") }, "values shown by size:\n\(text.output)")
        let traffic = lines.filter { $0.hasPrefix("mdp ") }
        #expect(!traffic.isEmpty && traffic.allSatisfy { $0.count <= 80 }, "\(traffic)")

        let json = try await host.run(["tap", subtree, "--json", "--duration", "1.5"])
        let objects = json.output.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }
        let values = { (key: String) in objects.filter { $0["key"] as? String == subtree + key }.compactMap { $0["value"] as? [String: Any] } }
        let navigation = try #require(values("nav").first?["navigation"] as? [String: Any], "\(json.output)")
        #expect(navigation["selectedTab"] as? String == "home", "\(navigation)")
        let home = try #require(values("vm/home").first, "\(json.output)")
        #expect((home["state"] as? [String: Any])?["phase"] as? String == "PHASE_SUCCESS", "\(home)")
        let carousels = ((home["payload"] as? [String: Any])?["home"] as? [String: Any])?["carousels"] as? [Any]
        #expect(carousels?.count == 5, "\(home)")
    }
}
