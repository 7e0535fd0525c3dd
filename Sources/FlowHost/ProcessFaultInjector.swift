import FlowbusEnvironment
import Foundation
import Glibc
import Logging
import MessagePath
import Supervision
import Synchronization

/// What stopped a fault aimed at a process, in words a person can act on.
public struct ProcessFaultError: Error, CustomStringConvertible, Equatable {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// Faults the host injects into plugin processes themselves rather than into its message paths:
/// signals (kill, stop), and fault orders — a skewed clock, a cut of what the host sends — that it
/// writes for an instance (`ProcessFaultOrder`) and announces with SIGUSR2. It aims them by plugin
/// and replica, or at "the one serving session X" from the host's history.
final class ProcessFaultInjector: Sendable {
    let supervisor: Supervisor
    let runDirectory: String
    let history: SessionHistory?
    private let logger: Logger
    /// The orders written, and the last serial given.
    private let orders = Mutex<(byInstance: [InstanceID: ProcessFaultOrder], serial: UInt64)>(([:], 0))

    /// Clears the orders a previous host run left, so no plugin starts skewed or cut off.
    init(supervisor: Supervisor, runDirectory: String, history: SessionHistory?, logger: Logger) {
        self.supervisor = supervisor
        self.runDirectory = runDirectory
        self.history = history
        self.logger = logger
        try? FileManager.default.removeItem(atPath: runDirectory + "/faults")
    }

    /// The instances of `plugin`: `replica` only, or every replica when nil.
    func instances(of plugin: String, replica: Int?) throws(ProcessFaultError) -> [InstanceID] {
        let all = supervisor.status().filter { $0.name == plugin }
        guard !all.isEmpty else {
            throw ProcessFaultError("this host runs no plugin \(plugin); `flowbus ps` lists its plugins")
        }
        let chosen = all.filter { replica == nil || $0.replica == replica }
        guard !chosen.isEmpty else {
            throw ProcessFaultError("plugin \(plugin) has no replica \(replica ?? 0) (it has \(all.count)); `flowbus ps` lists them")
        }
        return chosen.map { InstanceID(plugin: $0.name, replica: $0.replica) }
    }

    /// The instance whose worker last answered a request to `service` (a prefix) in `session`, or
    /// in any session when nil, as the host's history recorded it.
    func serving(service: String, session: String?) throws(ProcessFaultError) -> InstanceID {
        guard let history, history.isRecording else {
            throw ProcessFaultError("this host keeps no session history (--history-sessions 0), so it cannot tell which process serves a session; aim at a plugin by name instead")
        }
        let within = session.map { " in session \($0)" } ?? ""
        guard let (worker, _) = history.lastWorker(service: service, session: session) else {
            throw ProcessFaultError("no worker has answered a request to \(service)*\(within) yet; check the session with `flowbus trace`, or aim at a plugin by name")
        }
        // A worker's routing id is `<plugin>/<pid>/<n>`.
        let parts = worker.split(separator: "/")
        guard parts.count >= 2, let pid = Int32(parts[1]), let instance = supervisor.instance(pid: pid) else {
            throw ProcessFaultError("the process that last served \(service)*\(within) (worker \(worker)) is gone (it exited or was restarted); try again once it has served the session anew")
        }
        return instance.id
    }

    func signal(_ number: Int32, _ instance: InstanceID) throws(SupervisorError) {
        try supervisor.kill(plugin: instance.plugin, replica: instance.replica, signal: number)
    }

    /// Changes the order of `instance`, writes it, and tells the process (one restarting reads it when it starts).
    func order(_ instance: InstanceID, _ change: (inout ProcessFaultOrder) -> Void) throws(ProcessFaultError) {
        let order = orders.withLock { orders in
            var order = orders.byInstance[instance] ?? ProcessFaultOrder()
            change(&order)
            orders.serial += 1
            order.serial = orders.serial
            orders.byInstance[instance] = order
            return order
        }
        let path = ProcessFaultOrder.path(in: runDirectory, plugin: instance.plugin, replica: instance.replica)
        do {
            try order.write(path)
        } catch {
            throw ProcessFaultError("the fault order for \(instance) could not be written to \(path) (\(error)); check the run directory's permissions and free space")
        }
        do {
            try signal(ProcessFaultOrder.signal, instance)
        } catch .notRunning {
            // It reads the order when it starts.
            return
        } catch {
            throw ProcessFaultError("\(instance) could not be told of its fault order: \(error)")
        }
        // A fault asked for is in force when the host says so: wait (a little) for the plugin to
        // take it in. One that is stopped takes it in when it goes on.
        let deadline = ContinuousClock.now + .seconds(1)
        while ProcessFaultOrder.acknowledged(path) < order.serial {
            guard ContinuousClock.now < deadline else {
                logger.notice("a plugin has not taken in its fault order within 1 s (stopped, or busy); it will when it can",
                              metadata: ["flowbus.plugin": "\(instance)"])
                return
            }
            Thread.sleep(forTimeInterval: 0.002)
        }
    }

    /// Puts the clocks of `instances` right and ends their cuts (the end of a plan); returns those
    /// that had an order in force.
    @discardableResult
    func clear(_ instances: Set<InstanceID>) -> [InstanceID] {
        let ordered = orders.withLock { orders in instances.filter { orders.byInstance[$0]?.isEmpty == false } }
        return ordered.sorted { ($0.plugin, $0.replica) < ($1.plugin, $1.replica) }.filter { instance in
            do {
                try order(instance) { $0 = ProcessFaultOrder() }
                return true
            } catch {
                logger.warning("a plugin's fault order could not be cleared", metadata: ["flowbus.plugin": "\(instance)", "flowbus.error": "\(error)"])
                return false
            }
        }
    }
}
