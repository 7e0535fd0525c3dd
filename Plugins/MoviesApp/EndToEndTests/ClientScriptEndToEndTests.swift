import FlowbusTesting
import Foundation
import Testing

/// `flowbus client --script`: the client's keys and screens without a terminal, for demos and CI.
@Suite("Client scripts", .serialized)
struct ClientScriptEndToEndTests {
    static let scripts = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("ClientScripts")

    /// Run three times on one host: it ends as it began (the like undone), so it holds on every
    /// run, and the Like pressed right after coming back to the Home tab applies, though the tab's
    /// state was published again meanwhile (it used to be refused as stale).
    @Test("a script of keys and looks signs in, likes a movie, finds it in Likes, unlikes it and logs out, on every run", .timeLimit(.minutes(3)))
    func signInAndLike() async throws {
        let host = try await AppJourneysEndToEndTests.startApp()
        defer { Task { try? await host.stop() } }
        let script = Self.scripts.appendingPathComponent("sign-in-and-like.yaml").path
        for attempt in 1...3 {
            let run = try await host.run(["client", "--script", script])
            #expect(run.status == 0, "run \(attempt) of the script failed:\n\(run.output)")
            #expect(run.output.contains("all 24 steps passed"), "run \(attempt): \(run.output)")
        }
    }

    @Test("the first failing look exits 1 and prints the step, its line and the screen as it was", .timeLimit(.minutes(2)))
    func failingLookShowsTheScreen() async throws {
        let host = try await AppJourneysEndToEndTests.startApp()
        defer { Task { try? await host.stop() } }
        let file = TestScratch.file("fbs", suffix: ".yaml")
        try Data("""
        - see: Sign in to Amor
        - keys: "demo@flowbus.dev<Tab>wrong-password<Tab><Enter>"
        - see: {text: Now playing, timeout: 2}
        - see: never reached
        """.utf8).write(to: URL(fileURLWithPath: file))
        defer { try? FileManager.default.removeItem(atPath: file) }
        let run = try await host.run(["client", "--script", file, "--size", "24x80"])
        #expect(run.status == 1)
        #expect(run.output.contains("step 3 (line 3, see) failed"), "\(run.output)")
        #expect(run.output.contains("did not see \"Now playing\""), "\(run.output)")
        // The screen as it was: the view model's error as a modal alert over the sign-in form.
        #expect(run.output.contains("Invalid e-mail or password."), "\(run.output)")
        #expect(run.output.contains("+" + String(repeating: "-", count: 80) + "+"), "\(run.output)")
        #expect(!run.output.contains("never reached"))
    }

    @Test("a key name that names no key is refused before anything runs, with the names that exist")
    func badKeyName() async throws {
        let host = try await AppJourneysEndToEndTests.startApp()
        defer { Task { try? await host.stop() } }
        let file = TestScratch.file("fbs", suffix: ".yaml")
        try Data("- keys: \"<Tabb>\"\n".utf8).write(to: URL(fileURLWithPath: file))
        defer { try? FileManager.default.removeItem(atPath: file) }
        let run = try await host.run(["client", "--script", file])
        #expect(run.status == 1)
        #expect(run.output.contains("\"<Tabb>\""), "\(run.output)")
        #expect(run.output.contains("<S-Tab>"), "\(run.output)")
    }
}
