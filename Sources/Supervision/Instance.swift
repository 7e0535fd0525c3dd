import Foundation
import Glibc

/// One replica of one plugin, across all its incarnations; owned by the supervision loop's book.
struct Instance {
    let id: InstanceID
    let spec: PluginSpec
    let logPath: String
    /// The one CPU its processes run on (pinned placement), or nil: wherever the kernel puts them.
    let cpu: Int?
    var pid: pid_t?
    var state: PluginStatus.State = .starting
    var restarts = 0
    var incarnation = 0
    var lastExit: ExitReason?
    var startedAt: Date?
    var startedAtInstant: ContinuousClock.Instant?
    var lastHeartbeat: Date?
    /// Processes killed as hung (alive, silent on the bus past the liveness).
    var hangs = 0
    /// When each restart within the intensity period was decided.
    var recentRestarts: [ContinuousClock.Instant] = []
    /// Crashes since the instance last stayed up longer than the period: the backoff exponent.
    var consecutiveCrashes = 0
    var restartDue: ContinuousClock.Instant?

    init(spec: PluginSpec, replica: Int, logDirectory: URL, cpu: Int? = nil) {
        self.id = InstanceID(plugin: spec.name, replica: replica)
        self.spec = spec
        self.cpu = cpu
        self.logPath = logDirectory.appendingPathComponent("\(spec.name).\(replica).log").path
    }

    func status(now: ContinuousClock.Instant) -> PluginStatus {
        let running = pid != nil && (state == .running || state == .stopping)
        return PluginStatus(
            name: id.plugin, replica: id.replica, pid: pid, state: state, restarts: restarts,
            lastExitReason: lastExit?.description, startedAt: startedAt,
            // `now` may be read just before a start that the status then shows: never below zero.
            uptime: running ? max(0, startedAtInstant.map { (now - $0).seconds } ?? 0) : 0,
            lastHeartbeat: lastHeartbeat, hangs: hangs, incarnation: incarnation, logPath: logPath, cpu: cpu
        )
    }

    mutating func markStarted(pid: pid_t, now: ContinuousClock.Instant) {
        self.pid = pid
        incarnation += 1
        state = .running
        startedAt = Date()
        startedAtInstant = now
        lastHeartbeat = nil
        restartDue = nil
    }

    /// What to do after an exit, per the restart policy, the intensity and the backoff.
    enum NextStep: Equatable {
        case restart(after: Duration)
        case giveUp
        case stayDown
    }

    mutating func decideAfterExit(_ reason: ExitReason, settings: SupervisorSettings, now: ContinuousClock.Instant) -> NextStep {
        pid = nil
        lastExit = reason
        guard spec.restart.restarts(after: reason) else {
            state = .exited
            return .stayDown
        }
        if let started = startedAtInstant, now - started > settings.period, reason.startedAtAll {
            consecutiveCrashes = 0
        }
        recentRestarts.removeAll { now - $0 >= settings.period }
        guard recentRestarts.count < settings.intensity else {
            state = .failed
            return .giveUp
        }
        recentRestarts.append(now)
        let delay = Self.backoffDelay(crashes: consecutiveCrashes, backoff: settings.backoff)
        consecutiveCrashes += 1
        state = .backingOff
        restartDue = now + delay
        return .restart(after: delay)
    }

    /// `initial` for the first crash, doubling for each consecutive one, never above `max`.
    static func backoffDelay(crashes: Int, backoff: Backoff) -> Duration {
        var delay = backoff.initial
        for _ in 0..<min(crashes, 62) where delay < backoff.max {
            delay *= 2
        }
        return min(delay, backoff.max)
    }
}

extension ExitReason {
    var startedAtAll: Bool {
        if case .couldNotStart = self { return false }
        return true
    }
}
