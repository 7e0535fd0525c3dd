import FlowbusTesting
import Foundation
import Testing

/// The real `flowbus client` in real terminals (tmux panes) against the real app: keys typed,
/// screens read back.
@Suite("Terminal client under tmux", .serialized)
struct TerminalClientEndToEndTests {
    static func client(_ host: HostFixture, _ arguments: String = "") -> String {
        "\(host.flowbus.path) client --run-dir \(host.runDirectory) \(arguments)"
    }

    @Test("sign in with the demo account, open a Details page, go back, log out, quit: the terminal is restored",
          .timeLimit(.minutes(3)))
    func signInDetailsBackLogOut() async throws {
        let host = try await AppJourneysEndToEndTests.startApp()
        defer { Task { try? await host.stop() } }
        let tmux = Tmux()
        defer { tmux.stopNow() }
        try await tmux.open("a", Self.client(host))
        try await tmux.waitFor("a", ["Sign in to Amor", "[ Log in ]", "connected"])
        try await tmux.send("a", "demo@flowbus.dev", "Tab", "flowbus123")
        let typed = try await tmux.waitFor("a", ["[demo@flowbus.dev", "••••••••••"])
        #expect(!typed.contains("flowbus123"), "the password is not masked:\n\(typed)")
        try await tmux.send("a", "Tab", "Enter")
        try await tmux.waitFor("a", ["Now playing", "Popular actors", "1 Home", "4 Expenses"])
        // Resized smaller and back: the layout follows (the status line stays on the last row).
        try await tmux.resize("a", rows: 20, columns: 60)
        let small = try await tmux.waitFor("a", ["Now playing", "1 Home"])
        let rows = small.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(rows.count >= 20 && rows[19].contains("connected"), "the status line is not on row 20 of 20:\n\(small)")
        try await tmux.resize("a", rows: 30, columns: 100)
        try await tmux.waitFor("a", ["Now playing", "4 Expenses"])
        // The third carousel is Popular actors: Enter opens the first actor's Details.
        try await tmux.send("a", "Tab", "Tab", "Enter")
        try await tmux.waitFor("a", ["‹ Back", "Details", "Filmography"])
        try await tmux.send("a", "Escape")
        try await tmux.waitFor("a", ["Now playing"], absent: ["‹ Back", "Filmography"])
        try await tmux.send("a", "3")
        try await tmux.waitFor("a", ["[ Log out ]", "demo@flowbus.dev"])
        try await tmux.send("a", "Tab", "Enter")
        try await tmux.waitFor("a", ["Sign in to Amor"], absent: ["1 Home"])
        try await tmux.send("a", "C-q")
        let after = try await tmux.waitFor("a", ["CLIENT-EXIT=0", "left session"])
        // Back on the normal screen: the client's rows are gone, the shell's lines are there.
        #expect(!after.contains("[ Log in ]"), "the terminal was not restored:\n\(after)")
    }

    @Test("two drivers and a late observer on one session: each action shows in every client; kill -9 of coord-home leaves all on Details and the next action works",
          .timeLimit(.minutes(4)))
    func severalClientsOneSession() async throws {
        let host = try await AppJourneysEndToEndTests.startApp()
        defer { Task { try? await host.stop() } }
        let tmux = Tmux()
        defer { tmux.stopNow() }
        try await tmux.open("a", Self.client(host))
        try await tmux.waitFor("a", ["Sign in to Amor"])
        let session = try await tmux.session("a")
        try await tmux.send("a", "demo@flowbus.dev", "Tab", "flowbus123", "Tab", "Enter")
        try await tmux.waitFor("a", ["Now playing", "session \(session)"])

        // A second driver attaches and shows the current screen at once.
        try await tmux.open("b", Self.client(host, "--session \(session)"))
        try await tmux.waitFor("b", ["Now playing", "session \(session)"])
        // An action in b shows in a.
        try await tmux.send("b", "Tab", "Tab", "Enter")
        try await tmux.waitFor("b", ["Filmography", "‹ Back"])
        try await tmux.waitFor("a", ["Filmography", "‹ Back"])

        // A third client joins late, read-only, and shows the current screen at once.
        try await tmux.open("c", Self.client(host, "--session \(session) --observe"))
        try await tmux.waitFor("c", ["Filmography", "observing (read-only)"])
        try await tmux.send("c", "Escape")
        try await tmux.waitFor("c", ["read-only"])

        // kill -9 the Home coordinator while on Details: every client stays on Details.
        let plugin = try #require(try await host.plugins().first { $0["name"] as? String == "coord-home" })
        let pid = try #require((plugin["pid"] as? Int).map(Int32.init))
        #expect(kill(pid, SIGKILL) == 0)
        let restarted = try await HostFixture.eventually(timeout: .seconds(20), every: .milliseconds(100)) {
            let now = try await host.plugins().first { $0["name"] as? String == "coord-home" }
            return now?["state"] as? String == "running" && (now?["pid"] as? Int).map(Int32.init) != pid
        }
        #expect(restarted, "coord-home was not restarted")
        for window in ["a", "b", "c"] { try await tmux.waitFor(window, ["Filmography", "‹ Back"]) }

        // The next action works after the restart: a selects a movie of the filmography (a Home
        // coordinator action), and every client follows.
        try await tmux.send("a", "Tab", "Enter")
        for window in ["a", "b", "c"] { try await tmux.waitFor(window, ["Cast", "‹ Back"], absent: ["Filmography"]) }
        try await tmux.send("b", "Escape")
        for window in ["a", "b", "c"] { try await tmux.waitFor(window, ["Filmography"]) }
    }

    @Test("a client that crashes gives the terminal back: echo and line editing are on again", .timeLimit(.minutes(2)))
    func crashRestoresTheTerminal() async throws {
        let host = try await AppJourneysEndToEndTests.startApp()
        defer { Task { try? await host.stop() } }
        let tmux = Tmux()
        defer { tmux.stopNow() }
        // After the client, the pane prints the terminal's modes: raw mode left behind shows as -icanon -echo.
        try await tmux.open("a", "FLOWBUS_CLIENT_CRASH_AFTER_FIRST_FRAME=1 " + Self.client(host) + "; echo CRASH=$?; stty -a | tr ' ;' '\\n\\n' | grep -E '^-?(icanon|echo)$' | tr '\\n' ' '; echo MODES")
        let screen = try await tmux.waitFor("a", ["MODES"])
        #expect(screen.contains("CRASH=") && !screen.contains("CRASH=0"), "the client did not crash:\n\(screen)")
        #expect(screen.contains("icanon echo"), "the terminal was left in raw mode:\n\(screen)")
        #expect(!screen.contains("-icanon") && !screen.contains("-echo"), "the terminal was left in raw mode:\n\(screen)")
    }
}
