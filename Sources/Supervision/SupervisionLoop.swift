import Dispatch
import Foundation
import Logging
import Synchronization

/// The supervisor's state and the loop its own thread runs: every fork and waitpid happens there.
final class SupervisionLoop: Sendable {
    static let tick = DispatchTimeInterval.milliseconds(10)

    let book: Mutex<SupervisionBook>
    let settings: SupervisorSettings
    let environment: [String: String]
    let locator: CommandLocator
    let logDirectory: URL
    let logger: Logger
    let events: AsyncStream<SupervisorEvent>.Continuation
    /// Signalled to run the next tick at once instead of after the tick interval.
    private let wake = DispatchSemaphore(value: 0)
    /// When the log files are next measured (once a second).
    private let nextLogCheck = Atomic<UInt64>(0)

    init(
        manifest: Manifest, environment: [String: String], locator: CommandLocator, logDirectory: URL,
        logger: Logger, events: AsyncStream<SupervisorEvent>.Continuation
    ) {
        let instances = manifest.plugins.flatMap { spec in
            (0..<spec.replicas).map { Instance(spec: spec, replica: $0, logDirectory: logDirectory) }
        }
        self.book = Mutex(SupervisionBook(instances: instances))
        self.settings = manifest.supervisor
        self.environment = environment
        self.locator = locator
        self.logDirectory = logDirectory
        self.logger = logger
        self.events = events
    }

    /// Queues a command for the loop's thread; false once that thread has finished.
    func enqueue(_ command: SupervisionBook.Command) -> Bool {
        let accepted = book.withLock { book in
            guard !book.loopExited else { return false }
            book.commands.append(command)
            return true
        }
        if accepted { wake.signal() }
        return accepted
    }

    /// The thread's body; returns once the supervisor has stopped.
    func run() {
        while true {
            for command in takeCommands(exiting: false) {
                perform(command)
            }
            if book.withLock({ $0.phase == .stopped }) {
                // Commands that raced with the final stop still get their answer.
                for late in takeCommands(exiting: true) {
                    perform(late)
                }
                return
            }
            reapAndRestart()
            rotateLogsIfDue()
            _ = wake.wait(timeout: .now() + Self.tick)
        }
    }

    /// Once a second: every log in the log directory past `settings.logLimit` is rotated.
    private func rotateLogsIfDue() {
        let now = DispatchTime.now().uptimeNanoseconds
        guard settings.logLimit > 0, now >= nextLogCheck.load(ordering: .relaxed) else { return }
        nextLogCheck.store(now + 1_000_000_000, ordering: .relaxed)
        for name in LogRotation.rotate(in: logDirectory, limit: settings.logLimit) {
            logger.notice("rotated \(name): it passed \(settings.logLimit) bytes; the earlier part is in \(name).1", metadata: ["flowbus.log": "\(name)"])
        }
    }

    private func takeCommands(exiting: Bool) -> [SupervisionBook.Command] {
        book.withLock { book in
            book.loopExited = exiting
            defer { book.commands.removeAll() }
            return book.commands
        }
    }

    private func perform(_ command: SupervisionBook.Command) {
        switch command {
        case let .start(reply):
            reply.fulfil(startAll())
        case let .stop(reply):
            stopAll()
            reply.fulfil(())
        }
    }

    func metadata(_ instance: Instance, pid: pid_t? = nil) -> Logger.Metadata {
        var metadata: Logger.Metadata = [
            "flowbus.plugin": "\(instance.id.plugin)",
            "flowbus.replica": "\(instance.id.replica)",
        ]
        if let pid = pid ?? instance.pid { metadata["flowbus.pid"] = "\(pid)" }
        return metadata
    }
}
