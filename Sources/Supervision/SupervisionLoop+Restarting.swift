import Foundation
import CFlowHost
import Glibc
import Logging
import Synchronization

extension SupervisionLoop {
    /// One tick's work while running: reap exited children, decide their fate, start the due ones.
    func reapAndRestart() {
        let now = ContinuousClock.now
        book.withLock { book in
            guard book.phase == .running else { return }
            let wallNow = Date()
            for index in book.instances.indices {
                reapIfExited(&book.instances[index], now: now)
                killIfHung(&book.instances[index], now: wallNow)
                restartIfDue(&book.instances[index], now: now)
            }
        }
    }

    /// The reason the process exited, or nil while it runs.
    func reap(_ pid: pid_t) -> ExitReason? {
        var status: Int32 = 0
        let result = cflowhost_reap(pid, &status)
        if result == pid { return ExitReason(waitStatus: status) }
        if result == -ECHILD { return .vanished }
        return nil
    }

    /// Kills whatever the exited process left in its process group, which dies with it.
    func killLeftovers(ofGroup pid: pid_t) {
        _ = ChildProcess.signal(-pid, SIGKILL)
    }

    private func reapIfExited(_ instance: inout Instance, now: ContinuousClock.Instant) {
        guard let pid = instance.pid, let reason = reap(pid) else { return }
        killLeftovers(ofGroup: pid)
        var metadata = metadata(instance, pid: pid)
        metadata["flowbus.reason"] = "\(reason)"
        logger.warning("plugin \(instance.id) \(reason)", metadata: metadata)
        events.yield(.exited(instance.id, pid: pid, reason: reason))
        decide(&instance, after: reason, now: now)
    }

    /// A running process the broker heard from, and then not for the plugin's liveness, is alive
    /// but useless (stopped, deadlocked, a handler stuck past its limit): it gets SIGKILL, and the
    /// next tick reaps it and applies the restart policy as for any crash.
    private func killIfHung(_ instance: inout Instance, now: Date) {
        let liveness = instance.spec.liveness ?? settings.liveness
        guard liveness > .zero, instance.state == .running, let pid = instance.pid, let last = instance.lastHeartbeat else { return }
        let silence = now.timeIntervalSince(last)
        guard silence > liveness.seconds else { return }
        instance.hangs += 1
        // Heard from again only once its next process has workers.
        instance.lastHeartbeat = nil
        var metadata = metadata(instance, pid: pid)
        metadata["flowbus.silence"] = "\(DurationText.format(.milliseconds(Int64(silence * 1000))))"
        metadata["flowbus.liveness"] = "\(DurationText.format(liveness))"
        logger.error(
            "plugin \(instance.id) is alive but its workers have been silent on the bus for \(DurationText.format(.milliseconds(Int64(silence * 1000)))) (liveness \(DurationText.format(liveness))): it is hung or stopped; killing it so that it restarts. Its log may say what it was doing; raise `liveness` in the manifest if its work legitimately takes longer",
            metadata: metadata)
        _ = ChildProcess.signal(pid, SIGKILL)
    }

    private func restartIfDue(_ instance: inout Instance, now: ContinuousClock.Instant) {
        guard instance.state == .backingOff, let due = instance.restartDue, due <= now else { return }
        instance.restarts += 1
        do {
            try spawn(&instance)
        } catch {
            logger.error("\(error)", metadata: metadata(instance))
            decide(&instance, after: .couldNotStart(error.description), now: now)
        }
    }

    private func decide(_ instance: inout Instance, after reason: ExitReason, now: ContinuousClock.Instant) {
        switch instance.decideAfterExit(reason, settings: settings, now: now) {
        case let .restart(delay):
            logger.info("restarting plugin \(instance.id) in \(DurationText.format(delay))", metadata: metadata(instance))
            events.yield(.restarting(instance.id, after: delay))
        case .giveUp:
            logger.error("\(giveUpMessage(instance, reason: reason))", metadata: metadata(instance))
            events.yield(.gaveUp(instance.id, reason: reason))
        case .stayDown:
            logger.info("plugin \(instance.id) stays down (restart: \(instance.spec.restart.rawValue))", metadata: metadata(instance))
        }
    }

    private func giveUpMessage(_ instance: Instance, reason: ExitReason) -> String {
        let period = DurationText.format(settings.period)
        let history = settings.intensity == 0
            ? "died and its restart intensity is 0"
            : "restarted \(instance.recentRestarts.count) times in \(period) and keeps dying"
        return "plugin \(instance.id) \(history) (last: \(reason)); giving up on it — "
            + "read its log at \(instance.logPath) and fix it, then `flowbus up` again"
    }
}
