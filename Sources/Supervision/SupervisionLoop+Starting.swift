import FlowbusEnvironment
import Foundation
import Glibc
import Logging
import Synchronization

extension SupervisionLoop {
    /// Starts every instance in order; on a failure stops what it started and returns the error.
    func startAll() -> SupervisorError? {
        guard book.withLock({ $0.phase == .idle }) else { return .alreadyStarted }
        do {
            try FileManager.default.createDirectory(at: logDirectory, withIntermediateDirectories: true)
        } catch {
            stopAll()
            return .logDirectoryUnavailable(path: logDirectory.path, reason: error.localizedDescription)
        }
        let count = book.withLock { book in
            book.phase = .running
            return book.instances.count
        }
        logger.info("supervisor starting \(count) plugin processes")
        for index in 0..<count {
            let failure = book.withLock { book -> SupervisorError? in
                do throws(SupervisorError) {
                    try spawn(&book.instances[index])
                    return nil
                } catch {
                    book.instances[index].state = .failed
                    book.instances[index].lastExit = .couldNotStart(error.description)
                    return error
                }
            }
            if let failure {
                logger.error("\(failure); stopping the plugins already started")
                stopAll()
                return failure
            }
        }
        return nil
    }

    /// Starts the instance's next incarnation. Call only on the loop's thread, with the book locked.
    func spawn(_ instance: inout Instance) throws(SupervisorError) {
        let path = try locator.locate(instance.spec.command, plugin: instance.spec.name)
        var childEnvironment = environment.merging(instance.spec.env) { _, plugin in plugin }
        childEnvironment[BusVariables.plugin] = instance.id.plugin
        childEnvironment[BusVariables.replica] = "\(instance.id.replica)"
        childEnvironment[BusVariables.incarnation] = "\(instance.incarnation + 1)"
        let pid: pid_t
        do {
            pid = try ChildProcess.spawn(
                path: path, arguments: instance.spec.args, environment: childEnvironment, logPath: instance.logPath,
                cpu: instance.cpu
            )
        } catch {
            throw .spawnFailed(plugin: instance.spec.name, failure: error)
        }
        instance.markStarted(pid: pid, now: .now)
        var metadata = metadata(instance)
        metadata["flowbus.incarnation"] = "\(instance.incarnation)"
        if let cpu = instance.cpu {
            metadata["flowbus.cpu"] = "\(cpu)"
            // The child pins itself before exec, best effort: a CPU taken away since the host
            // started (hotplug, a cpuset changed) leaves it where the kernel puts it.
            if let allowed = CPUPlacement.allowedCPUs(of: pid), allowed != [cpu] {
                logger.warning("plugin not pinned to CPU \(cpu) as pinned placement asks: it may run on CPUs \(allowed.map(String.init).joined(separator: ",")); check the host's CPUs (taskset -p \(getpid())) and start the host again", metadata: metadata)
            }
        }
        logger.info("plugin started", metadata: metadata)
        events.yield(.started(instance.id, pid: pid, incarnation: instance.incarnation))
    }
}
