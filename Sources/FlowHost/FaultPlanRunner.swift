import Foundation
import Glibc
import Logging
import MessagePath
import Supervision
import Synchronization

/// Plays a plan on a running host, on a thread of its own: installs and removes its rules, kills
/// and stops its plugins at their times, and logs every process fault beside the message
/// decisions. Cancelling (or the end of the run) removes what it installed and wakes what it stopped.
final class FaultPlanRunner: Sendable {
    private enum Step {
        case install([FaultRule])
        case remove([String])
        case kill(String, Int)
        case stop(String, Int)
        case resume(String, Int)
    }

    let plan: FaultPlan
    private let faults: FaultRules
    private let supervisor: Supervisor
    private let logger: Logger
    private let cancelled = Atomic<Bool>(false)
    private let finished = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)

    init(plan: FaultPlan, faults: FaultRules, supervisor: Supervisor, logger: Logger) {
        self.plan = plan
        self.faults = faults
        self.supervisor = supervisor
        self.logger = logger
    }

    var isFinished: Bool { finished.load(ordering: .acquiring) }

    /// Starts the plan from now: the seed's decisions start again, every earlier rule goes.
    func start() {
        faults.removeAll()
        faults.reset(seed: plan.seed)
        let thread = Thread { [self] in
            play()
            finished.store(true, ordering: .releasing)
            done.signal()
        }
        thread.name = "flowbus-fault-plan"
        thread.start()
    }

    /// Stops the plan where it is and undoes it; returns once it has.
    func cancel() {
        cancelled.store(true, ordering: .releasing)
        if !isFinished { done.wait() }
    }

    private func play() {
        let steps = timeline()
        let start = ContinuousClock.now
        let end = plan.durationMilliseconds.map { start + .milliseconds($0) }
        var installed: Set<String> = []
        var stopped: Set<String> = []
        logger.info("fault plan started", metadata: ["flowbus.plan": "\(plan.name)", "flowbus.seed": "\(plan.seed)", "flowbus.events": "\(plan.events.count)"])
        for (at, step) in steps {
            guard wait(until: start + .milliseconds(at)) else { break }
            perform(step, installed: &installed, stopped: &stopped)
        }
        // Open-ended events last until the run's end (or a cancel).
        if let end { _ = wait(until: end) } else if !installed.isEmpty || !stopped.isEmpty { _ = wait(until: nil) }
        for id in installed { faults.remove(id: id) }
        for instance in stopped {
            let parts = instance.split(separator: "/")
            perform(.resume(String(parts[0]), Int(parts[1]) ?? 0), installed: &installed, stopped: &stopped)
        }
        logger.info("fault plan ended", metadata: ["flowbus.plan": "\(plan.name)", "flowbus.cancelled": "\(cancelled.load(ordering: .relaxed))"])
    }

    /// Sleeps until `deadline` (nil: until cancelled) in short naps; false if cancelled first.
    private func wait(until deadline: ContinuousClock.Instant?) -> Bool {
        while !cancelled.load(ordering: .acquiring) {
            let now = ContinuousClock.now
            if let deadline, now >= deadline { return true }
            let left = deadline.map { $0 - now } ?? .milliseconds(50)
            Thread.sleep(forTimeInterval: min(left, .milliseconds(50)).secondsValue)
        }
        return false
    }

    private func perform(_ step: Step, installed: inout Set<String>, stopped: inout Set<String>) {
        switch step {
        case .install(let rules):
            for rule in rules {
                do {
                    try faults.install(rule)
                    installed.insert(rule.id)
                } catch {
                    logger.warning("fault plan: a rule was refused", metadata: ["flowbus.rule": "\(rule.id)", "flowbus.error": "\(error)"])
                }
            }
        case .remove(let ids):
            for id in ids where installed.remove(id) != nil { faults.remove(id: id) }
        case .kill(let plugin, let replica):
            signal(SIGKILL, plugin, replica, effect: "kill")
        case .stop(let plugin, let replica):
            if signal(SIGSTOP, plugin, replica, effect: "stop") { stopped.insert("\(plugin)/\(replica)") }
        case .resume(let plugin, let replica):
            if stopped.remove("\(plugin)/\(replica)") != nil { signal(SIGCONT, plugin, replica, effect: "continue") }
        }
    }

    @discardableResult
    private func signal(_ number: Int32, _ plugin: String, _ replica: Int, effect: String) -> Bool {
        do {
            try supervisor.kill(plugin: plugin, replica: replica, signal: number)
            faults.record(scope: .process, rule: plan.name, subject: "\(plugin)/\(replica)", effect: effect)
            return true
        } catch {
            logger.warning("fault plan: could not signal a plugin", metadata: ["flowbus.plugin": "\(plugin)/\(replica)", "flowbus.error": "\(error)"])
            faults.record(scope: .process, rule: plan.name, subject: "\(plugin)/\(replica)", effect: "\(effect) failed: \(error)")
            return false
        }
    }

    /// Every start and end of the plan's events, in time order (ends first at equal times).
    private func timeline() -> [(Int64, Step)] {
        var steps: [(at: Int64, order: Int, step: Step)] = []
        for (index, event) in plan.events.enumerated() {
            let end = event.durationMilliseconds.map { event.atMilliseconds + $0 }
            switch event.fault {
            case .rules(let rules):
                steps.append((event.atMilliseconds, 2 * index + 1, .install(rules)))
                if let end { steps.append((end, 2 * index, .remove(rules.map(\.id)))) }
            case .kill(let plugin, let replica):
                steps.append((event.atMilliseconds, 2 * index + 1, .kill(plugin, replica)))
            case .stop(let plugin, let replica):
                steps.append((event.atMilliseconds, 2 * index + 1, .stop(plugin, replica)))
                if let end { steps.append((end, 2 * index, .resume(plugin, replica))) }
            }
        }
        return steps.sorted { ($0.at, $0.order % 2, $0.order) < ($1.at, $1.order % 2, $1.order) }.map { ($0.at, $0.step) }
    }
}
