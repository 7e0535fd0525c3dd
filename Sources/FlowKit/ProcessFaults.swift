import FlowbusEnvironment
import Foundation
import Logging
import MessagePath
import ZeroMQ

/// The time a plugin's own code should read where time decides something (a token's expiry, a
/// lockout): the host may skew it (`flowbus fault clock`), as it skews the runtimes' heartbeats,
/// timeouts and idle sessions.
public enum PluginClock {
    public static func date() -> Date { Date(timeIntervalSince1970: ProcessClock.unixSeconds()) }
}

/// Takes in the host's `ProcessFaultOrder` for this instance: when the plugin starts, and each
/// time the host sends SIGUSR2.
enum ProcessFaultListener {
    static func apply(_ environment: PluginEnvironment, signalled: Bool, logger: Logger) {
        guard let directory = environment.runDirectory else { return }
        let path = ProcessFaultOrder.path(in: directory, plugin: environment.plugin, replica: environment.replica)
        let order: ProcessFaultOrder
        do {
            order = try ProcessFaultOrder.read(path)
        } catch {
            logger.warning("the host's fault order could not be read; the clock and partition stay as they were",
                           metadata: ["flowbus.path": "\(path)", "flowbus.error": "\(error)"])
            return
        }
        let now = ProcessFaultOrder.nowUnixMilliseconds()
        if let clock = order.clock {
            ProcessClock.set(ClockSkew(offsetMilliseconds: clock.offsetMilliseconds, rate: clock.rate),
                             alreadyElapsed: .milliseconds(max(0, now - clock.setAtUnixMilliseconds)))
        } else {
            ProcessClock.set(ClockSkew())
        }
        if let until = order.cutUntilUnixMilliseconds, until > now {
            IncomingPartition.cut(for: .milliseconds(until - now))
        } else {
            IncomingPartition.heal()
        }
        try? ProcessFaultOrder.acknowledge(path, serial: order.serial)
        // Read at every start: said only when it asks for something, or when the host signalled.
        if !order.isEmpty || signalled {
            logger.notice(order.isEmpty ? "fault order from the host: clock put right, no cut" : "fault order from the host", metadata: [
                "flowbus.clock.offset_ms": "\(order.clock?.offsetMilliseconds ?? 0)",
                "flowbus.clock.rate": "\(order.clock?.rate ?? 1)",
                "flowbus.cut_ms": "\(max(0, (order.cutUntilUnixMilliseconds ?? now) - now))",
            ])
        }
    }
}
