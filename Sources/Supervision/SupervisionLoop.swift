import CFlowHost
import Dispatch
import Foundation
import Glibc
import Logging
import Synchronization

/// The supervisor's state and the loop its own thread runs: every fork and waitpid happens there.
final class SupervisionLoop: Sendable {
    /// How often the loop looks at its children when it cannot be told of their exits (no
    /// pidfd on this kernel): the next tick reaps a crashed one.
    static let tick = Duration.milliseconds(10)
    /// How often it looks when every running child has a pidfd, which wakes it at once when the
    /// child exits: only silent plugins (`killIfHung`) and log sizes are looked for on this beat.
    static let idleTick = Duration.milliseconds(100)

    let book: Mutex<SupervisionBook>
    let settings: SupervisorSettings
    let environment: [String: String]
    let locator: CommandLocator
    let logDirectory: URL
    let logger: Logger
    let events: AsyncStream<SupervisorEvent>.Continuation
    /// Written to run the next tick at once instead of after the tick interval (an eventfd;
    /// -1 if none could be made, and the loop then ticks every `tick`).
    private let wake: Int32
    /// Loop passes so far, and how many of them a child's exit woke (its pidfd): for tests.
    let passes = Atomic<Int>(0)
    let exitWakes = Atomic<Int>(0)
    /// When the log files are next measured (once a second).
    private let nextLogCheck = Atomic<UInt64>(0)

    init(
        manifest: Manifest, environment: [String: String], locator: CommandLocator, logDirectory: URL,
        placement: CPUPlacement? = nil, logger: Logger, events: AsyncStream<SupervisorEvent>.Continuation
    ) {
        let slots = manifest.plugins.flatMap { spec in (0..<spec.replicas).map { (spec, $0) } }
        let instances = slots.enumerated().map { index, slot in
            Instance(spec: slot.0, replica: slot.1, logDirectory: logDirectory, cpu: placement?.cpu(ofInstance: index))
        }
        self.book = Mutex(SupervisionBook(instances: instances))
        self.settings = manifest.supervisor
        self.environment = environment
        self.locator = locator
        self.logDirectory = logDirectory
        self.logger = logger
        self.events = events
        let wake = cflowhost_wake_fd()
        if wake < 0 {
            logger.warning("the supervisor could not make its wake-up descriptor (\(String(cString: strerror(-wake)))); it looks at its plugins every \(Self.tick) instead of being woken", metadata: ["flowbus.service": "supervisor"])
        }
        self.wake = wake
    }

    deinit {
        if wake >= 0 { close(wake) }
    }

    /// Queues a command for the loop's thread; false once that thread has finished.
    func enqueue(_ command: SupervisionBook.Command) -> Bool {
        let accepted = book.withLock { book in
            guard !book.loopExited else { return false }
            book.commands.append(command)
            return true
        }
        if accepted { signalWake() }
        return accepted
    }

    private func signalWake() {
        guard wake >= 0 else { return }
        var one: UInt64 = 1
        _ = write(wake, &one, 8)
    }

    /// The thread's body; returns once the supervisor has stopped.
    func run() {
        // A pidfd for each running child, by pid: it polls readable the moment the child exits.
        var watched: [pid_t: Int32] = [:]
        defer { for descriptor in watched.values { close(descriptor) } }
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
            waitForWork(watching: &watched)
        }
    }

    /// Sleeps until a command comes, a watched child exits, a restart is due, or the tick
    /// passes: `idleTick` when every running child is watched through a pidfd, else `tick`.
    private func waitForWork(watching watched: inout [pid_t: Int32]) {
        let (running, restartDue) = book.withLock { book -> ([pid_t], ContinuousClock.Instant?) in
            // Only a plugin backing off waits for its restart; one that gave up keeps its last due time.
            (book.instances.compactMap(\.pid), book.instances.filter { $0.state == .backingOff }.compactMap(\.restartDue).min())
        }
        for (pid, descriptor) in watched where !running.contains(pid) {
            close(descriptor)
            watched[pid] = nil
        }
        var everyChildWatched = wake >= 0
        for pid in running where watched[pid] == nil {
            let descriptor = cflowhost_pidfd_open(pid)
            if descriptor >= 0 { watched[pid] = descriptor } else { everyChildWatched = false }
        }
        var timeout = everyChildWatched ? Self.idleTick : Self.tick
        if let restartDue { timeout = min(timeout, max(.zero, restartDue - .now)) }
        var items = [pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
        items += watched.values.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        // Whole milliseconds, rounded up, so that a restart due in under one does not spin.
        let milliseconds = Int32(clamping: (timeout + .nanoseconds(999_999)).milliseconds)
        _ = items.withUnsafeMutableBufferPointer { poll($0.baseAddress, nfds_t($0.count), milliseconds) }
        passes.add(1, ordering: .relaxed)
        if items.dropFirst().contains(where: { $0.revents != 0 }) { exitWakes.add(1, ordering: .relaxed) }
        if wake >= 0, items[0].revents != 0 {
            var count: UInt64 = 0
            _ = read(wake, &count, 8)
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
