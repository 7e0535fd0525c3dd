import CFlowHost
import Foundation
import Logging
import Synchronization

/// Runs a manifest's plugins as child processes and keeps them running the way OTP does:
/// restart policies, restart intensity with backoff, ordered start and reverse-order stop.
/// All forks and waits happen on the supervisor's one long-lived thread, so children's
/// parent-death signal fires only when the host dies. `start()` and `stop()` block.
public final class Supervisor: Sendable {
    /// started → exited → restarting / gaveUp → started …, then stopped; finishes after `stop()`.
    public let events: AsyncStream<SupervisorEvent>
    let loop: SupervisionLoop

    /// - Parameters:
    ///   - environment: the variables every child gets, before its plugin's `env` and FLOWBUS_*.
    ///   - commandSearchPath: folders searched, before the environment's PATH, for bare command names.
    ///   - logDirectory: where each instance's stdout and stderr go, as `<plugin>.<replica>.log`.
    public init(
        manifest: Manifest,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        commandSearchPath: [String] = [],
        logDirectory: URL,
        placement: CPUPlacement? = nil,
        logger: Logger
    ) {
        let (events, continuation) = AsyncStream.makeStream(of: SupervisorEvent.self, bufferingPolicy: .bufferingNewest(4096))
        self.events = events
        let locator = CommandLocator(
            baseDirectory: manifest.baseDirectory,
            commandSearchPath: commandSearchPath,
            environmentPATH: environment["PATH"] ?? ProcessInfo.processInfo.environment["PATH"]
        )
        loop = SupervisionLoop(
            manifest: manifest, environment: environment, locator: locator,
            logDirectory: logDirectory, placement: placement, logger: logger, events: continuation
        )
    }

    deinit {
        stop()
    }

    /// Starts every plugin process in manifest order and returns once all are spawned.
    /// On a failure it stops those already started and throws. A supervisor starts once.
    public func start() throws(SupervisorError) {
        let firstStart = loop.book.withLock { book in
            defer { book.threadLaunched = true }
            return !book.threadLaunched
        }
        guard firstStart else { throw .alreadyStarted }
        let thread = Thread { [loop] in loop.run() }
        thread.name = "flowbus.supervisor"
        thread.start()
        let reply = PendingReply<SupervisorError?>()
        if loop.enqueue(.start(reply)), let error = reply.wait() {
            throw error
        }
    }

    /// Stops every plugin in reverse manifest order (SIGTERM, its shutdown timeout, SIGKILL)
    /// and returns when none is left. Safe to call more than once, or without `start()`.
    public func stop() {
        let launched = loop.book.withLock { book in
            defer { book.threadLaunched = true }
            if !book.threadLaunched { book.phase = .stopped }
            return book.threadLaunched
        }
        guard launched else {
            loop.events.finish()
            return
        }
        let reply = PendingReply<Void>()
        if loop.enqueue(.stop(reply)) {
            reply.wait()
        }
    }

    /// Every instance's state, in start order.
    public func status() -> [PluginStatus] {
        let now = ContinuousClock.now
        return loop.book.withLock { book in book.instances.map { $0.status(now: now) } }
    }

    /// The instance whose process is `pid`, and its incarnation; nil when none is.
    public func instance(pid: Int32) -> (id: InstanceID, incarnation: Int)? {
        loop.book.withLock { book in
            book.instances.first(where: { $0.pid == pid }).map { ($0.id, $0.incarnation) }
        }
    }

    /// `name/replica#incarnation` of the instance whose process is `pid`, or nil when none is.
    public func pluginName(pid: Int32) -> String? {
        instance(pid: pid).map { "\($0.id.plugin)/\($0.id.replica)#\($0.incarnation)" }
    }

    /// Notes that the process `pid` was heard from at `time` (an MDP worker's traffic); false if it is not ours.
    @discardableResult
    public func recordHeartbeat(pid: Int32, at time: Date = Date()) -> Bool {
        loop.book.withLock { book in
            guard let index = book.instances.firstIndex(where: { $0.pid == pid }) else { return false }
            if book.instances[index].lastHeartbeat.map({ $0 < time }) ?? true {
                book.instances[index].lastHeartbeat = time
            }
            return true
        }
    }

    /// Sends `signal` to one instance's process, for fault injection; the restart policy then applies.
    public func kill(plugin: String, replica: Int = 0, signal: Int32 = SIGKILL) throws(SupervisorError) {
        let id = InstanceID(plugin: plugin, replica: replica)
        // Under the lock the pid cannot be reaped, so it cannot name a recycled process.
        try loop.book.withLock { book throws(SupervisorError) in
            guard let index = book.index(of: id) else { throw .unknownInstance(id) }
            guard let pid = book.instances[index].pid else { throw .notRunning(id) }
            let error = ChildProcess.signal(pid, signal)
            if error != 0 { throw .signalFailed(id, pid: pid, errno: error) }
        }
    }
}
