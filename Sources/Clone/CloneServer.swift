import Dispatch
import Foundation
import Logging
import MessagePath
import Synchronization
import ZeroMQ

/// The 12/CHP server: snapshots on a ROUTER, updates on a publisher, writes from a collector.
public enum CloneServer {
    /// Binds the three sockets on a new thread and starts serving. Throws when a socket cannot bind,
    /// saying which endpoint and what to do.
    public static func start(
        context: ZMQContext,
        configuration: CloneServerConfiguration = .init(),
        endpoints: CloneEndpoints,
        faults: FaultRules = FaultRules(),
        logger: Logger
    ) throws(CloneStartError) -> CloneServerHandle {
        try configuration.validate()
        let wake: WakeSignal
        do { wake = try WakeSignal() } catch { throw .system(error.description) }
        let shared = CloneServerShared(wake: wake)
        let started = Mutex<Result<Void, CloneStartError>?>(nil)
        let ready = DispatchSemaphore(value: 0)
        let thread = Thread {
            ThreadName.set("fb-clone-server")
            let loop: CloneServerLoop
            do {
                loop = try CloneServerLoop(
                    context: context, configuration: configuration, endpoints: endpoints,
                    faults: faults, shared: shared, logger: logger)
            } catch let error as CloneStartError {
                started.withLock { $0 = .failure(error) }
                ready.signal()
                shared.finish()
                return
            } catch {
                started.withLock { $0 = .failure(.system("\(error)")) }
                ready.signal()
                shared.finish()
                return
            }
            started.withLock { $0 = .success(()) }
            ready.signal()
            loop.run()
            shared.finish()
        }
        thread.name = "flowbus-clone-server"
        thread.start()
        ready.wait()
        if case .failure(let error) = started.withLock({ $0 }) {
            throw error
        }
        logger.info("clone server serving", metadata: [
            "flowbus.snapshot": "\(endpoints.snapshot)", "flowbus.publisher": "\(endpoints.publisher)",
            "flowbus.collector": "\(endpoints.collector)",
        ])
        return CloneServerHandle(endpoints: endpoints, shared: shared)
    }
}

/// What the server thread and its handle share; safe from any thread.
final class CloneServerShared: Sendable {
    /// A request run on the server thread; nil when the server stopped before it ran.
    typealias Command = @Sendable (CloneServerLoop?) -> Void

    let wake: WakeSignal
    let stopping = Atomic<Bool>(false)
    let running = Atomic<Bool>(true)
    let statistics = Mutex(CloneServerStatistics())
    /// Passes of the loop so far (tests: an idle loop sleeps instead of waking on a timer).
    let passes = Atomic<Int>(0)
    /// Subscribers of each session's subtree (`/s/<id>/`) alone, by session id: the clients
    /// following that session (a terminal client, an observer, a script, a tap of it).
    let followers = Mutex<[String: Int]>([:])
    private let commands = Mutex<(open: Bool, pending: [Command])>((true, []))
    private let exited = DispatchSemaphore(value: 0)
    private let joined = Mutex(false)

    init(wake: WakeSignal) {
        self.wake = wake
    }

    /// Runs `command` on the server thread; false when the server has stopped.
    func submit(_ command: @escaping Command) -> Bool {
        let accepted = commands.withLock { state in
            guard state.open else { return false }
            state.pending.append(command)
            return true
        }
        if accepted { wake.wake() }
        return accepted
    }

    func takeCommands() -> [Command] {
        commands.withLock { state in
            defer { state.pending.removeAll() }
            return state.pending
        }
    }

    func finish() {
        running.store(false, ordering: .releasing)
        let left = commands.withLock { state in
            state.open = false
            defer { state.pending.removeAll() }
            return state.pending
        }
        // Commands that raced with the stop still resume their callers.
        for command in left { command(nil) }
        exited.signal()
    }

    func stopAndWait() {
        stopping.store(true, ordering: .releasing)
        wake.wake()
        joined.withLock { joined in
            guard !joined else { return }
            exited.wait()
            joined = true
        }
    }
}

/// A running clone server.
public final class CloneServerHandle: Sendable {
    public let endpoints: CloneEndpoints
    let shared: CloneServerShared

    init(endpoints: CloneEndpoints, shared: CloneServerShared) {
        self.endpoints = endpoints
        self.shared = shared
    }

    /// Counters as the server thread last published them (at most `statisticsInterval` old).
    public var statistics: CloneServerStatistics {
        shared.statistics.withLock { $0 }
    }

    public var isRunning: Bool { shared.running.load(ordering: .acquiring) }

    /// How many subscribers follow each session's subtree (`/s/<id>/`) alone, by session id:
    /// clients attached to it. Processes following every session (plugins) are not among them.
    public var sessionFollowers: [String: Int] { shared.followers.withLock { $0 } }

    /// The stored entries whose key starts with `prefix`, sorted by key; empty once stopped.
    public func entries(prefix: String = "") async -> [CloneEntry] {
        await withCheckedContinuation { (continuation: CheckedContinuation<[CloneEntry], Never>) in
            let submitted = shared.submit { loop in
                continuation.resume(returning: loop?.entries(prefix: prefix) ?? [])
            }
            if !submitted { continuation.resume(returning: []) }
        }
    }

    /// Stops serving, closes the sockets and waits for the server thread to end.
    public func stop() {
        shared.stopAndWait()
    }

    deinit {
        stop()
    }
}
