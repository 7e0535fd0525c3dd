import ArgumentParser
import FlowClient
import FlowHost
import Foundation
import FlowTerminal
import Majordomo
import Supervision

struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Starts an app (the package's default one unless told) and opens it in this terminal; quitting stops what it started.",
        discussion: """
        Runs the package's default app (Plugins/apps.yaml), or --app NAME, or --manifest FILE, and \
        prints the app's notes (its manifest's `app.notes`: a demo account, where to look next).
        If a host already runs in the run directory, the demo uses it and leaves it running.
        """
    )

    @OptionGroup var global: GlobalOptions

    @Option(name: .long, help: "Seconds to wait for every plugin of the app to run.")
    var timeout: Double = 60

    @Option(name: .long, help: "The app to run, by its name in the package's Plugins/apps.yaml (default: $FLOWBUS_APP, else the registry's default app).")
    var app: String?

    @Option(name: .long, help: "The manifest (YAML) to run instead of an app of the registry.")
    var manifest: String?

    func validate() throws {
        if manifest != nil, app != nil { throw ValidationError("--manifest and --app both say what to run; give one of them") }
    }

    func run() async throws {
        // Fail before starting anything when there is no terminal to show the app in.
        guard isatty(STDIN_FILENO) == 1, isatty(STDOUT_FILENO) == 1 else { throw TerminalError.notATerminal }
        let directory = global.runDirectory
        let manifestURL = try manifest.map { URL(fileURLWithPath: $0).standardizedFileURL } ?? AppChoice.manifest(app: app)
        let info = (try? Manifest.load(from: manifestURL))?.app
        var started = false
        if try directory.liveHost() == nil {
            print("flowbus demo: starting \(info.map { $0.title.isEmpty ? $0.name : $0.title } ?? "the app") (\(manifestURL.path), run directory \(directory.path))…")
            let pid = try Detached.start(
                arguments: [ExecutablePath.path, "up", "--manifest", manifestURL.path, "--run-dir", directory.path, "--log-level", global.logLevel],
                runDirectory: directory)
            started = true
            Self.reap(pid)
            Self.stopOnSignals(directory)
        } else {
            print("flowbus demo: a host already runs in \(directory.path); using it, and leaving it running")
        }
        do {
            try await Self.waitForApp(directory, timeout: timeout, label: "flowbus demo")
            let notes = info?.notes.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            if !notes.isEmpty { print(notes) }
            try await Client.interactive(directory: directory, session: nil, observe: false,
                                         welcome: notes.split(separator: "\n").first.map(String.init) ?? "",
                                         hostStays: !started, global: global)
        } catch {
            if started { stopHost(directory) }
            throw error
        }
        if started { stopHost(directory) }
    }

    /// Ctrl-C or SIGTERM while the app starts (before the client takes the keys) still stops
    /// the host this demo started: it runs in a session of its own and would outlive us.
    private static func stopOnSignals(_ directory: RunDirectory) {
        for signal in [SIGINT, SIGTERM, SIGHUP] {
            Foundation.signal(signal, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signal, queue: .global())
            source.setEventHandler {
                print("\nflowbus demo: stopping…")
                stopHost(directory)
                Foundation.exit(130)
            }
            source.resume()
            signalSources.append(source)
        }
    }

    /// Reaps the host this demo started as soon as it exits (`flowbus down` from another
    /// terminal, a crash): an unreaped child stays a zombie, which other tools took for alive.
    private static func reap(_ pid: pid_t) {
        let thread = Thread {
            var status: Int32 = 0
            while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        }
        thread.name = "flowbus-demo-reaper"
        thread.start()
    }

    /// Keeps the sources alive; written once, by `run` before the app starts, read by nothing.
    nonisolated(unsafe) private static var signalSources: [any DispatchSourceSignal] = []

    /// Waits until every plugin runs and coord.app serves (sessions open through it), showing progress.
    static func waitForApp(_ directory: RunDirectory, timeout: Double, label: String) async throws {
        let control = ControlClient(runDirectory: directory, timeout: .seconds(2))
        let deadline = Date().addingTimeInterval(timeout)
        var last = ""
        while Date() < deadline {
            if let status: HostStatus = try? control.send(ControlRequest(command: .status)) {
                let running = status.plugins.filter { $0.state == .running }.count
                let line = "\(label): \(running)/\(status.plugins.count) plugins running"
                if line != last {
                    print(line)
                    last = line
                }
                if running == status.plugins.count, (status.broker.workersPerService["coord.app"] ?? 0) > 0 { return }
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        throw HostError.startFailed("the app's plugins were not all running within \(Int(timeout)) s; `flowbus ps --run-dir \(directory.path)` shows which, and their logs are in \(directory.logDirectory)")
    }

    private func stopHost(_ directory: RunDirectory) { Self.stopHost(directory) }

    /// Starts `manifest`'s app detached in `directory` when no host runs there (saying so as
    /// `label`); returns whether it started one, which the caller stops at the end.
    static func startHostIfNone(_ directory: RunDirectory, manifest: URL, logLevel: String, label: String) throws -> Bool {
        guard try directory.liveHost() == nil else { return false }
        print("\(label): starting the app (\(manifest.path), run directory \(directory.path))")
        try Detached.start(arguments: [ExecutablePath.path, "up", "--manifest", manifest.path, "--run-dir", directory.path, "--log-level", logLevel],
                           runDirectory: directory)
        return true
    }

    static func stopHost(_ directory: RunDirectory, label: String = "flowbus demo") {
        guard let descriptor = try? directory.liveHost() else { return }
        let control = ControlClient(runDirectory: directory)
        if (try? control.send(ControlRequest(command: .down)) as Empty) == nil { kill(descriptor.pid, SIGTERM) }
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, !Self.exited(descriptor.pid) { usleep(20_000) }
        if !Self.exited(descriptor.pid) {
            kill(descriptor.pid, SIGKILL)
            _ = Self.exited(descriptor.pid)
        }
        print("\(label): stopped the host \(descriptor.pid) and every plugin it started")
    }

    /// Whether `pid` is gone; reaps it when it was our child (the host this demo started).
    private static func exited(_ pid: pid_t) -> Bool {
        var status: Int32 = 0
        if waitpid(pid, &status, WNOHANG) == pid { return true }
        return kill(pid, 0) != 0
    }
}
