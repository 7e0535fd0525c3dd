import ArgumentParser
import FlowHost
import Logging

/// Options every subcommand shares.
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: "The host's run directory (default: $FLOWBUS_RUN_DIR or /tmp/flowbus-<uid>/default).")
    var runDir: String?

    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "info"

    var runDirectory: RunDirectory {
        runDir.map { RunDirectory(path: $0) } ?? .defaultDirectory()
    }

    func validate() throws {
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("--log-level \(logLevel) is not a level; use one of trace, debug, info, notice, warning, error, critical")
        }
    }

    /// Bootstraps swift-log once for this process: the executable's job, never a library's.
    /// `quiet`: the level when --log-level was left at info (a command whose own lines matter more).
    func bootstrapLogging(quiet: Logger.Level? = nil) {
        let given = Logger.Level(rawValue: logLevel) ?? .info
        let level = given == .info ? quiet ?? given : given
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }
}
