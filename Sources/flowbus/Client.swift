import ArgumentParser
import FlowClient
import FlowHost
import FlowTerminal
import Foundation
import Logging

struct Client: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Opens the app of a running host in this terminal, on a new session or an existing one.",
        discussion: """
        With no option the client opens a new session. --session ID attaches a second driver to a \
        session (both can act; of two intents on the same screen version one applies and the other \
        is refused with the reason); add --observe for a read-only mirror. --script FILE plays keys \
        and expectations without a terminal and exits 1 on the first that fails.

        Keys: Tab/Shift-Tab move, Enter acts, Esc goes back (in a text field it first leaves the \
        field), 1-4 pick a tab, l shows the event log, \
        ? shows every key, q quits. Logs go to <run-dir>/logs/client-<pid>.log.
        """
    )

    @OptionGroup var global: GlobalOptions

    @Option(name: .long, help: "Attach to this session instead of opening a new one (`flowbus sessions` lists them).")
    var session: String?

    @Flag(name: .long, help: "Read-only: mirror the session, send nothing (needs --session).")
    var observe = false

    @Flag(name: .long, help: "With --session: open a new session under that id when none is open (without it, an unknown id is refused).")
    var create = false

    @Option(name: .long, help: "Play this script (keys, sends, expectations) without a terminal.")
    var script: String?

    @Option(name: .long, help: "Rows and columns of the virtual screen in --script mode, e.g. 24x80.")
    var size: String = "24x80"

    func validate() throws {
        if observe, session == nil { throw ValidationError("--observe mirrors an existing session: add --session ID (`flowbus sessions` lists them)") }
        if create, session == nil { throw ValidationError("--create opens a session under the id --session ID gives; without --session a new session is opened anyway") }
        if create, observe { throw ValidationError("--create opens a session to drive; --observe only mirrors one that is open") }
        if let problem = ClientSize.problem(size) { throw ValidationError(problem) }
    }

    func run() async throws {
        let directory = global.runDirectory
        if let script {
            global.bootstrapLogging()
            let parsed = try DriveScript.load(path: script)
            // Key names are checked before anything runs (text with ${…} is checked when played).
            for step in parsed.steps {
                guard case .keys(let keys) = step.step, !keys.contains("${") else { continue }
                do { _ = try Key.parse(keys) } catch {
                    FileHandle.standardError.write(Data("flowbus client: \(script), \(step.label): \(error)\n".utf8))
                    throw ExitCode(1)
                }
            }
            let endpoints = try BusEndpoints.announced(by: directory)
            let size = ClientSize(size)!
            let runner = ClientScriptRunner(endpoints: endpoints, rows: size.rows, columns: size.columns)
            let passed = await runner.run(parsed, session: session, observe: observe) { print($0) }
            if !passed { throw ExitCode(1) }
            return
        }
        try await Self.interactive(directory: directory, session: session, observe: observe, create: create, global: global)
    }

    /// Opens or attaches, runs the full-screen client, and says how to come back, unless the host
    /// stops right after (`hostStays` false: a demo that started it), when there is no coming back.
    static func interactive(
        directory: RunDirectory, session: String?, observe: Bool, create: Bool = false, welcome: String = "",
        hostStays: Bool = true, global: GlobalOptions
    ) async throws {
        global.bootstrapLogging()
        let endpoints = try BusEndpoints.announced(by: directory)
        var options = SessionClientOptions()
        options.name = (observe ? "observer/" : "client/") + "\(getpid())"
        let logger = Logger(label: "flowbus.client")
        let client: SessionClient
        if let session {
            client = try await SessionClient.attach(session, endpoints: endpoints, announce: !observe, options: options, create: create, logger: logger)
        } else {
            client = try await SessionClient.open(endpoints, options: options, logger: logger)
        }
        defer { client.stop() }
        // While the screen is ours, stderr (the log) goes to a file; errors after it show as usual.
        let redirect = StandardErrorRedirect(to: directory.logDirectory + "/client-\(getpid()).log")
        defer { redirect.restore() }
        try await TerminalClient(client: client, readOnly: observe, welcome: welcome, logger: logger).run()
        if hostStays {
            print("left session \(client.session); `flowbus client --session \(client.session)` attaches to it again")
        } else {
            print("left session \(client.session)")
        }
    }
}

struct ClientSize {
    var rows: Int
    var columns: Int

    static let least = (rows: 8, columns: 30)

    init?(_ text: String) {
        guard Self.problem(text) == nil else { return nil }
        let parts = text.lowercased().split(separator: "x").compactMap { Int($0) }
        rows = parts[0]
        columns = parts[1]
    }

    /// What is wrong with `text` as a size, in words that say what to write instead; nil when right.
    static func problem(_ text: String) -> String? {
        let parts = text.lowercased().split(separator: "x", omittingEmptySubsequences: false).map { Int($0) }
        guard parts.count == 2, let rows = parts[0], let columns = parts[1] else {
            return "--size \(text) is not ROWSxCOLUMNS; write it like 24x80 (24 rows of 80 columns)"
        }
        let swapped = rows >= least.columns && columns >= least.rows && columns < least.columns ? "; rows come first: did you mean \(columns)x\(rows)?" : ""
        if columns < least.columns {
            return "--size \(text) is \(columns) columns wide; the client needs at least \(least.columns)\(swapped)"
        }
        if rows < least.rows {
            return "--size \(text) is \(rows) rows tall; the client needs at least \(least.rows)"
        }
        return nil
    }
}

/// Sends stderr to a file until `restore()`, so log lines never draw over the full-screen client.
final class StandardErrorRedirect {
    private var saved: Int32 = -1

    init(to path: String) {
        try? FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let file = open(path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        guard file >= 0 else { return }
        saved = dup(2)
        dup2(file, 2)
        close(file)
    }

    func restore() {
        guard saved >= 0 else { return }
        dup2(saved, 2)
        close(saved)
        saved = -1
    }
}
