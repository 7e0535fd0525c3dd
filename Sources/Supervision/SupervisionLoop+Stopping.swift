import Glibc
import Logging
import Synchronization

extension SupervisionLoop {
    /// How long a SIGKILLed process may take to be reaped before the supervisor reports it stuck.
    static let killGrace = Duration.seconds(5)

    /// Stops plugins in reverse manifest order: SIGTERM, the shutdown timeout, then SIGKILL.
    func stopAll() {
        let pluginNames = book.withLock { book -> [String]? in
            guard book.phase != .stopped, book.phase != .stopping else { return nil }
            book.phase = .stopping
            for index in book.instances.indices where book.instances[index].state == .backingOff {
                book.instances[index].state = .stopped
                book.instances[index].restartDue = nil
                events.yield(.stopped(book.instances[index].id))
            }
            var names: [String] = []
            for instance in book.instances where !names.contains(instance.id.plugin) {
                names.append(instance.id.plugin)
            }
            return names
        }
        guard let pluginNames else { return }
        logger.info("supervisor stopping")
        for name in pluginNames.reversed() {
            stopPlugin(named: name)
        }
        book.withLock { $0.phase = .stopped }
        logger.info("supervisor stopped")
        events.finish()
    }

    private func stopPlugin(named name: String) {
        let indices = book.withLock { book in
            Array(book.instances.indices.filter { book.instances[$0].id.plugin == name }.reversed())
        }
        guard let first = indices.first else { return }
        let timeout = book.withLock { $0.instances[first].spec.shutdownTimeout } ?? settings.shutdownTimeout
        signalAlive(indices, SIGTERM, state: .stopping)
        guard !waitUntilReaped(indices, for: timeout) else { return }

        let left = book.withLock { book in indices.compactMap { book.instances[$0].pid } }
        logger.warning("plugin \(name) did not exit within \(DurationText.format(timeout)) of SIGTERM; sending SIGKILL to pids \(left)")
        signalAlive(indices, SIGKILL, state: .stopping)
        if !waitUntilReaped(indices, for: Self.killGrace) {
            logger.error("plugin \(name) survived SIGKILL for \(DurationText.format(Self.killGrace)) (stuck in the kernel?); pids \(left) may remain")
        }
    }

    /// Reaps what already exited, then signals the process group of every instance still alive.
    private func signalAlive(_ indices: [Int], _ signal: Int32, state: PluginStatus.State) {
        book.withLock { book in
            for index in indices {
                reapStopping(&book.instances[index])
                guard let pid = book.instances[index].pid else { continue }
                if ChildProcess.signal(-pid, signal) == ESRCH {
                    _ = ChildProcess.signal(pid, signal)
                }
                book.instances[index].state = state
            }
        }
    }

    /// True when every instance was reaped before the timeout.
    private func waitUntilReaped(_ indices: [Int], for timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while true {
            let allReaped = book.withLock { book in
                for index in indices { reapStopping(&book.instances[index]) }
                return indices.allSatisfy { book.instances[$0].pid == nil }
            }
            if allReaped { return true }
            if ContinuousClock.now >= deadline { return false }
            usleep(5000)
        }
    }

    private func reapStopping(_ instance: inout Instance) {
        guard let pid = instance.pid, let reason = reap(pid) else { return }
        killLeftovers(ofGroup: pid)
        instance.pid = nil
        instance.lastExit = reason
        instance.state = .stopped
        var metadata = metadata(instance, pid: pid)
        metadata["flowbus.reason"] = "\(reason)"
        logger.info("plugin \(instance.id) stopped: \(reason)", metadata: metadata)
        events.yield(.stopped(instance.id))
    }
}
