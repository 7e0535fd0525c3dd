import Foundation
import Glibc
import Logging
import MessagePath
import Supervision
import Synchronization

/// Plays a plan on a running host, on a thread of its own: installs and removes its rules, kills
/// and stops its plugins, skews their clocks and cuts them off at their times, and logs every
/// process fault beside the message decisions. Cancelling (or the end of the run) removes what it
/// installed, wakes what it stopped, and puts clocks and cuts right.
final class FaultPlanRunner: Sendable {
    private enum Step {
        case install([FaultRule])
        case remove([String])
        /// SIGKILL, or SIGSTOP undone by `resume` of the same event.
        case signal(Int32, Target, event: Int)
        case resume(event: Int)
        case clock(String, Int?, ClockSkew?)
        /// A cut from the host for the given milliseconds (nil: until the run ends), or healed (false).
        case cut(String, Bool, Int64?)
    }

    private enum Target {
        case instance(InstanceID)
        case serving(service: String, session: String?)
    }

    let plan: FaultPlan
    private let faults: FaultRules
    private let processes: ProcessFaultInjector
    private let logger: Logger
    private let cancelled = Atomic<Bool>(false)
    private let finished = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)
    /// Signalled once the events at 0 s have been played.
    private let begun = DispatchSemaphore(value: 0)

    init(plan: FaultPlan, faults: FaultRules, processes: ProcessFaultInjector, logger: Logger) {
        self.plan = plan
        self.faults = faults
        self.processes = processes
        self.logger = logger
    }

    var isFinished: Bool { finished.load(ordering: .acquiring) }

    /// Starts the plan from now. `fresh`: the seed's decisions start again and every earlier rule
    /// goes (a plan); otherwise it plays beside what is set (one fault asked for by hand).
    func start(fresh: Bool = true) {
        if fresh {
            faults.removeAll()
            faults.reset(seed: plan.seed)
        }
        let thread = Thread { [self] in
            play()
            finished.store(true, ordering: .releasing)
            done.signal()
        }
        thread.name = "flowbus-fault-plan"
        thread.start()
    }

    /// Waits until the events at 0 s are in force (a fault asked for by hand is, when `flowbus fault` returns).
    func waitUntilBegun(timeout: Duration = .seconds(5)) {
        _ = begun.wait(timeout: .now() + timeout.secondsValue)
    }

    /// Stops the plan where it is and undoes it; returns once it has.
    func cancel() {
        cancelled.store(true, ordering: .releasing)
        if !isFinished { done.wait() }
    }

    private struct Undo {
        var installed: Set<String> = []
        /// The instance each stop event stopped.
        var stopped: [Int: InstanceID] = [:]
        /// The instances it gave a fault order.
        var ordered: Set<InstanceID> = []
        /// Kills and stops aimed at a plugin that was restarting: sent once it runs again.
        var pending: [PendingSignal] = []
    }

    /// A signal for a plugin between two processes (killed or crashed, not yet restarted).
    private struct PendingSignal {
        var number: Int32
        var instance: InstanceID
        var event: Int
        var effect: String
        var since: ContinuousClock.Instant
        /// A kill waits this long; a stop, until its own end (`resume`).
        var until: ContinuousClock.Instant?
    }

    /// How long a kill waits for a restarting plugin's next process.
    static let killWaitsForRestart = Duration.seconds(2)

    private func play() {
        let steps = timeline()
        let start = ContinuousClock.now
        let end = plan.durationMilliseconds.map { start + .milliseconds($0) }
        var undo = Undo()
        logger.info("fault plan started", metadata: ["flowbus.plan": "\(plan.name)", "flowbus.seed": "\(plan.seed)", "flowbus.events": "\(plan.events.count)"])
        var signalled = false
        for (at, step) in steps {
            if at > 0, !signalled {
                signalled = true
                begun.signal()
            }
            guard wait(until: start + .milliseconds(at), &undo) else { break }
            perform(step, &undo)
        }
        if !signalled { begun.signal() }
        // Open-ended events last until the run's end (or a cancel).
        if let end {
            _ = wait(until: end, &undo)
        } else if plan.events.contains(where: \.isOpenEnded) || !undo.pending.isEmpty {
            _ = wait(until: nil, &undo)
        }
        for pending in undo.pending { giveUp(pending, reason: "the plan ended first") }
        undo.pending = []
        for id in undo.installed { faults.remove(id: id) }
        for event in undo.stopped.keys.sorted() { perform(.resume(event: event), &undo) }
        if !undo.ordered.isEmpty {
            for instance in processes.clear(undo.ordered) {
                faults.record(scope: .process, rule: plan.name, subject: Self.subject(instance), effect: "clock put right, cut healed")
            }
        }
        logger.info("fault plan ended", metadata: ["flowbus.plan": "\(plan.name)", "flowbus.cancelled": "\(cancelled.load(ordering: .relaxed))"])
    }

    /// Sleeps until `deadline` in short naps, sending the pending signals whose plugin runs again
    /// meanwhile; false if cancelled first. Nil: until cancelled, or, for a plan without open-ended
    /// events, until no signal is pending.
    private func wait(until deadline: ContinuousClock.Instant?, _ undo: inout Undo) -> Bool {
        let openEnded = plan.events.contains(where: \.isOpenEnded)
        while !cancelled.load(ordering: .acquiring) {
            if !undo.pending.isEmpty { retryPending(&undo) }
            let now = ContinuousClock.now
            if let deadline, now >= deadline { return true }
            if deadline == nil, !openEnded, undo.pending.isEmpty { return true }
            // A restarted plugin is aimed at within 10 ms of its start.
            let nap: Duration = undo.pending.isEmpty ? .milliseconds(50) : .milliseconds(10)
            let left = deadline.map { $0 - now } ?? nap
            Thread.sleep(forTimeInterval: min(left, nap).secondsValue)
        }
        return false
    }

    /// Sends each pending signal whose plugin runs again; drops those past their wait.
    private func retryPending(_ undo: inout Undo) {
        var waiting: [PendingSignal] = []
        for pending in undo.pending {
            do {
                try processes.signal(pending.number, pending.instance)
                let late = (ContinuousClock.now - pending.since).components
                let milliseconds = late.seconds * 1000 + late.attoseconds / 1_000_000_000_000_000
                faults.record(scope: .process, rule: plan.name, subject: Self.subject(pending.instance),
                              effect: "\(pending.effect), \(milliseconds) ms late: it was restarting")
                if pending.number == SIGSTOP { undo.stopped[pending.event] = pending.instance }
            } catch .notRunning {
                if let until = pending.until, ContinuousClock.now >= until {
                    giveUp(pending, reason: "it did not run again within \(DurationText.format(Self.killWaitsForRestart))")
                } else {
                    waiting.append(pending)
                }
            } catch {
                signalFailed(pending.effect, pending.instance, error)
            }
        }
        undo.pending = waiting
    }

    private func giveUp(_ pending: PendingSignal, reason: String) {
        let subject = Self.subject(pending.instance)
        logger.warning("fault plan: a plugin did not run again in time", metadata: ["flowbus.plugin": "\(subject)", "flowbus.fault": "\(pending.effect)"])
        faults.record(scope: .process, rule: plan.name, subject: subject,
                      effect: "\(pending.effect) failed: the plugin was restarting and \(reason); give the plugin's restart more time in the plan")
    }

    private func perform(_ step: Step, _ undo: inout Undo) {
        switch step {
        case .install(let rules):
            for rule in rules {
                do {
                    try faults.install(rule)
                    undo.installed.insert(rule.id)
                } catch {
                    logger.warning("fault plan: a rule was refused", metadata: ["flowbus.rule": "\(rule.id)", "flowbus.error": "\(error)"])
                }
            }
        case .remove(let ids):
            for id in ids where undo.installed.remove(id) != nil { faults.remove(id: id) }
        case .signal(let number, let target, let event):
            let effect = number == SIGKILL ? "kill" : "stop"
            let instance: InstanceID
            switch target {
            case .instance(let id):
                instance = id
            case .serving(let service, let session):
                do {
                    instance = try processes.serving(service: service, session: session)
                } catch {
                    logger.warning("fault plan: no process to aim at", metadata: ["flowbus.service": "\(service)", "flowbus.error": "\(error)"])
                    faults.record(scope: .process, rule: plan.name, subject: FaultPlanEvent.serving(service, session), effect: "\(effect) failed: \(error)")
                    return
                }
            }
            do {
                try processes.signal(number, instance)
                faults.record(scope: .process, rule: plan.name, subject: Self.subject(instance), effect: effect)
                if number == SIGSTOP { undo.stopped[event] = instance }
            } catch .notRunning {
                // Killed or crashed, and not yet restarted: aimed at its next process.
                logger.info("fault plan: the plugin is restarting; its fault waits for the next process",
                            metadata: ["flowbus.plugin": "\(Self.subject(instance))", "flowbus.fault": "\(effect)"])
                let now = ContinuousClock.now
                undo.pending.append(PendingSignal(number: number, instance: instance, event: event, effect: effect, since: now,
                                                  until: number == SIGSTOP ? nil : now + Self.killWaitsForRestart))
            } catch {
                signalFailed(effect, instance, error)
            }
        case .resume(let event):
            if let instance = undo.stopped.removeValue(forKey: event) {
                send(SIGCONT, instance, effect: "continue")
            } else if let index = undo.pending.firstIndex(where: { $0.event == event }) {
                giveUp(undo.pending.remove(at: index), reason: "its stop's time was over first")
            }
        case .clock(let plugin, let replica, let skew):
            let now = ProcessFaultOrder.nowUnixMilliseconds()
            order(plugin, replica, effect: skew.map { "clock " + FaultPlanEvent.text($0) } ?? "clock put right", &undo) { order in
                order.clock = skew.map { ProcessFaultOrder.Clock(offsetMilliseconds: $0.offsetMilliseconds, rate: $0.rate, setAtUnixMilliseconds: now) }
            }
        case .cut(let plugin, let on, let milliseconds):
            // Open-ended: a day, healed when the run ends.
            let until = ProcessFaultOrder.nowUnixMilliseconds() + (milliseconds ?? 86_400_000)
            let effect = on ? "cut from the host" + (milliseconds.map { " for \(FaultPlanEvent.text($0))" } ?? "") : "cut from the host healed"
            order(plugin, nil, effect: effect, &undo) { $0.cutUntilUnixMilliseconds = on ? until : nil }
        }
    }

    private func order(_ plugin: String, _ replica: Int?, effect: String, _ undo: inout Undo, _ change: (inout ProcessFaultOrder) -> Void) {
        do {
            for instance in try processes.instances(of: plugin, replica: replica) {
                undo.ordered.insert(instance)
                try processes.order(instance, change)
                faults.record(scope: .process, rule: plan.name, subject: Self.subject(instance), effect: effect)
            }
        } catch {
            logger.warning("fault plan: a plugin's fault order failed", metadata: ["flowbus.plugin": "\(plugin)", "flowbus.error": "\(error)"])
            faults.record(scope: .process, rule: plan.name, subject: plugin, effect: "\(effect) failed: \(error)")
        }
    }

    @discardableResult
    private func send(_ number: Int32, _ instance: InstanceID, effect: String) -> Bool {
        let subject = Self.subject(instance)
        do {
            try processes.signal(number, instance)
            faults.record(scope: .process, rule: plan.name, subject: subject, effect: effect)
            return true
        } catch {
            signalFailed(effect, instance, error)
            return false
        }
    }

    /// A signal that could not be sent: said in the log and in the decision log.
    private func signalFailed(_ effect: String, _ instance: InstanceID, _ error: SupervisorError) {
        let subject = Self.subject(instance)
        logger.warning("fault plan: could not signal a plugin", metadata: ["flowbus.plugin": "\(subject)", "flowbus.error": "\(error)"])
        faults.record(scope: .process, rule: plan.name, subject: subject, effect: "\(effect) failed: \(error)")
    }

    /// How the decision log names an instance: `vm-details/0`.
    private static func subject(_ instance: InstanceID) -> String { "\(instance.plugin)/\(instance.replica)" }

    /// Every start and end of the plan's events, in time order (ends first at equal times).
    private func timeline() -> [(Int64, Step)] {
        var steps: [(at: Int64, order: Int, step: Step)] = []
        for (index, event) in plan.events.enumerated() {
            let end = event.durationMilliseconds.map { event.atMilliseconds + $0 }
            func add(_ start: Step, _ finish: Step?) {
                steps.append((event.atMilliseconds, 2 * index + 1, start))
                if let end, let finish { steps.append((end, 2 * index, finish)) }
            }
            switch event.fault {
            case .rules(let rules):
                add(.install(rules), .remove(rules.map(\.id)))
            case .kill(let plugin, let replica):
                add(.signal(SIGKILL, .instance(InstanceID(plugin: plugin, replica: replica)), event: index), nil)
            case .stop(let plugin, let replica):
                add(.signal(SIGSTOP, .instance(InstanceID(plugin: plugin, replica: replica)), event: index), .resume(event: index))
            case .killServing(let service, let session):
                add(.signal(SIGKILL, .serving(service: service, session: session), event: index), nil)
            case .stopServing(let service, let session):
                add(.signal(SIGSTOP, .serving(service: service, session: session), event: index), .resume(event: index))
            case .clock(let plugin, let replica, let skew):
                add(.clock(plugin, replica, skew), .clock(plugin, replica, nil))
            case .partition(let plugin, let direction, let id):
                if direction != .fromHost {
                    let rules = FaultPlanEvent.partitionRules(plugin, id: id)
                    add(.install(rules), .remove(rules.map(\.id)))
                }
                if direction != .toHost {
                    add(.cut(plugin, true, event.durationMilliseconds), .cut(plugin, false, nil))
                }
            }
        }
        return steps.sorted { ($0.at, $0.order % 2, $0.order) < ($1.at, $1.order % 2, $1.order) }.map { ($0.at, $0.step) }
    }
}
