import Foundation
import Glibc
import Logging
import Synchronization
@testable import Supervision

/// A fresh folder per test, since tests run in parallel.
final class TestDirectory: Sendable {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("flowbus-supervision-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }

    var path: String { url.path }
    var logs: URL { url.appendingPathComponent("logs") }

    func file(_ name: String) -> String { url.appendingPathComponent(name).path }

    func read(_ name: String) -> String {
        (try? String(contentsOfFile: file(name), encoding: .utf8)) ?? ""
    }

    func lines(_ name: String) -> [String] {
        read(name).split(separator: "\n").map(String.init)
    }
}

/// Collects a supervisor's events so tests wait for an order of events instead of sleeping.
final class EventLog: Sendable {
    private let seen = Mutex<[SupervisorEvent]>([])
    private let finished = Atomic<Bool>(false)

    init(_ stream: AsyncStream<SupervisorEvent>) {
        Task { [self] in
            for await event in stream { seen.withLock { $0.append(event) } }
            finished.store(true, ordering: .releasing)
        }
    }

    var events: [SupervisorEvent] { seen.withLock { $0 } }
    var isFinished: Bool { finished.load(ordering: .acquiring) }

    /// Waits until `condition` holds for the events so far; nil after the timeout.
    @discardableResult
    func wait(
        timeout: Duration = .seconds(5), until condition: ([SupervisorEvent]) -> Bool
    ) async -> [SupervisorEvent]? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let events = self.events
            if condition(events) { return events }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return nil
    }

    func count(_ kind: EventKind, of id: InstanceID? = nil) -> Int {
        events.filter { $0.kind == kind && (id == nil || $0.instance == id) }.count
    }
}

enum EventKind {
    case started, exited, restarting, gaveUp, stopped
}

extension SupervisorEvent {
    var kind: EventKind {
        switch self {
        case .started: .started
        case .exited: .exited
        case .restarting: .restarting
        case .gaveUp: .gaveUp
        case .stopped: .stopped
        }
    }

    var pid: Int32? {
        switch self {
        case let .started(_, pid, _), let .exited(_, pid, _): pid
        default: nil
        }
    }
}

extension [SupervisorEvent] {
    func kinds(of id: InstanceID) -> [EventKind] {
        filter { $0.instance == id }.map(\.kind)
    }
}

/// Records every log message, to check what the supervisor tells the operator.
struct CapturingLogHandler: LogHandler {
    let messages: LogMessages
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let keys = (event.metadata ?? [:]).keys.sorted().joined(separator: ",")
        messages.lines.withLock { $0.append("\(event.level): \(event.message) [\(keys)]") }
    }
}

final class LogMessages: Sendable {
    let lines = Mutex<[String]>([])
    var all: [String] { lines.withLock { $0 } }
}

func quietLogger() -> Logger {
    Logger(label: "flowbus.supervision.tests") { _ in SwiftLogNoOpLogHandler() }
}

func capturingLogger() -> (Logger, LogMessages) {
    let messages = LogMessages()
    return (Logger(label: "flowbus.supervision.tests") { _ in CapturingLogHandler(messages: messages) }, messages)
}

/// A shell one-liner as a plugin.
func shellPlugin(
    _ name: String, _ script: String, restart: RestartPolicy = .permanent, replicas: Int = 1,
    env: [String: String] = [:], shutdownTimeout: Duration? = nil
) -> PluginSpec {
    PluginSpec(
        name: name, command: "/bin/sh", args: ["-c", script], env: env, restart: restart,
        replicas: replicas, shutdownTimeout: shutdownTimeout
    )
}

func fastSettings(intensity: Int = 5, period: Duration = .seconds(10), shutdownTimeout: Duration = .seconds(2)) -> SupervisorSettings {
    SupervisorSettings(
        intensity: intensity, period: period,
        backoff: Backoff(initial: .milliseconds(20), max: .milliseconds(80)),
        shutdownTimeout: shutdownTimeout
    )
}

/// Runs blocking supervisor calls on a thread of their own, off Swift's small cooperative pool.
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

/// True while the process exists and is not a zombie.
func isAlive(_ pid: Int32) -> Bool {
    guard kill(pid, 0) == 0 else { return errno != ESRCH }
    let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
    guard let close = stat.lastIndex(of: ")") else { return false }
    return !stat[close...].hasPrefix(") Z")
}

/// Waits for a file the children write to hold `count` lines.
func waitForLines(_ directory: TestDirectory, _ name: String, count: Int, timeout: Duration = .seconds(5)) async -> [String] {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        let lines = directory.lines(name)
        if lines.count >= count { return lines }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return directory.lines(name)
}
