import ArgumentParser
import FlowHost
import Foundation
import MessagePath

/// `flowbus fault kill|stop|clock|partition`: one fault aimed at a plugin's process, played now
/// beside any plan that is playing (which it leaves alone).
extension Fault {
    /// Which process: a plugin's replica, or the one that last served a session.
    struct ProcessTarget: ParsableArguments {
        @Option(name: .long, help: "The plugin, as `flowbus ps` names it (e.g. vm-details).")
        var plugin: String?

        @Option(name: .long, help: "The plugin's replica (default 0).")
        var replica: Int?

        @Option(name: .long, help: "Instead of --plugin: the process whose worker last answered this service prefix (e.g. vm.details), as the host's history says.")
        var serving: String?

        @Option(name: .long, help: "With --serving: in this session only (`flowbus sessions` lists them).")
        var session: String?

        func validate() throws {
            guard (plugin == nil) != (serving == nil) else {
                throw ValidationError("name the process with --plugin NAME [--replica N], or with --serving SERVICE [--session ID]")
            }
            if serving != nil, replica != nil { throw ValidationError("--replica goes with --plugin; --serving finds the replica itself") }
            if plugin != nil, session != nil { throw ValidationError("--session goes with --serving SERVICE (the process that last served it in that session)") }
        }

        func fault(kill: Bool) -> FaultPlanEvent.Fault {
            if let serving {
                return kill ? .killServing(service: serving, session: session) : .stopServing(service: serving, session: session)
            }
            let plugin = plugin ?? ""
            return kill ? .kill(plugin: plugin, replica: replica ?? 0) : .stop(plugin: plugin, replica: replica ?? 0)
        }
    }

    /// Plays `fault` now, for `milliseconds` (nil: until `flowbus fault clear`), and says so.
    static func play(_ fault: FaultPlanEvent.Fault, for milliseconds: Int64?, name: String, runDirectory: RunDirectory) throws {
        let event = FaultPlanEvent(atMilliseconds: 0, durationMilliseconds: milliseconds, fault: fault)
        let plan = FaultPlan(name: name, seed: 0, events: [event])
        let done: [String] = try ControlClient(runDirectory: runDirectory).send(ControlRequest(command: .faultPlan, plan: plan, beside: true))
        for line in done {
            let summary = line.replacingOccurrences(of: "at 0s", with: "now")
            print(summary + (milliseconds == nil && !isInstant(fault) ? " (until `flowbus fault clear`)" : ""))
        }
        print("`flowbus fault decisions` shows what was done")
    }

    private static func isInstant(_ fault: FaultPlanEvent.Fault) -> Bool {
        switch fault {
        case .kill, .killServing: true
        default: false
        }
    }

    static func duration(_ text: String?, _ option: String) throws -> Int64? {
        guard let text else { return nil }
        do {
            return try FaultPlan.milliseconds(text, option)
        } catch {
            throw ValidationError(error.description)
        }
    }

    struct Kill: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Sends SIGKILL to one plugin process (its restart policy brings it back).",
            discussion: "Examples: `flowbus fault kill --plugin coord-home`; `flowbus fault kill --serving vm.details --session 3f2a…`.")

        @OptionGroup var global: GlobalOptions
        @OptionGroup var target: ProcessTarget

        func run() throws {
            try Fault.play(target.fault(kill: true), for: nil, name: "kill", runDirectory: global.runDirectory)
        }
    }

    struct Stop: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Sends SIGSTOP to one plugin process, and SIGCONT after --for (a stall: alive, but silent).",
            discussion: "Example: `flowbus fault stop --serving coord.home --for 5s`.")

        @OptionGroup var global: GlobalOptions
        @OptionGroup var target: ProcessTarget

        @Option(name: .customLong("for"), help: "How long it stays stopped, e.g. 5s (default 5s).")
        var duration = "5s"

        func run() throws {
            try Fault.play(target.fault(kill: false), for: try Fault.duration(duration, "--for"), name: "stop", runDirectory: global.runDirectory)
        }
    }

    struct Clock: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Skews a plugin's clock: the time its heartbeats, timeouts, idle sessions, tokens and lockouts read.",
            discussion: """
                --offset jumps it (30s ahead, -5s behind); --rate makes it drift (2: twice as fast). Without --for it \
                stays skewed until `flowbus fault clear`. Example: `flowbus fault clock --plugin services --offset 11m`.
                """)

        @OptionGroup var global: GlobalOptions

        @Option(name: .long, help: "The plugin, as `flowbus ps` names it.")
        var plugin: String

        @Option(name: .long, help: "One replica only (default: every replica).")
        var replica: Int?

        @Option(name: .long, help: "How far to jump, e.g. 30s, 11m or -5s.")
        var offset: String?

        @Option(name: .long, help: "How fast the clock runs from now: 1 is real speed, 2 twice as fast, 0.5 half.")
        var rate: Double = 1

        @Option(name: .customLong("for"), help: "How long the skew lasts, e.g. 10s (default: until `flowbus fault clear`).")
        var duration: String?

        func run() throws {
            var offsetMilliseconds: Int64 = 0
            if let offset {
                do { offsetMilliseconds = try FaultPlan.signedMilliseconds(offset, "--offset") } catch { throw ValidationError(error.description) }
            }
            let skew = ClockSkew(offsetMilliseconds: offsetMilliseconds, rate: rate)
            do { try skew.validate() } catch { throw ValidationError(error.description) }
            guard !skew.isNone else { throw ValidationError("give --offset (such as 30s or -5s) or a --rate other than 1; as it is, the clock would not change") }
            try Fault.play(.clock(plugin: plugin, replica: replica, skew: skew), for: try Fault.duration(duration, "--for"), name: "clock",
                           runDirectory: global.runDirectory)
        }
    }

    struct Partition: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Cuts a plugin off from the host: what it sends, what it is sent, or both.",
            discussion: """
                to-host loses what the plugin sends (requests, replies, heartbeats, Clone writes) at the host; from-host \
                loses what the host sends it (requests, replies, heartbeats, Clone updates) in the plugin. Example: \
                `flowbus fault partition --plugin vm-home --for 3s`.
                """)

        @OptionGroup var global: GlobalOptions

        @Option(name: .long, help: "The plugin (every replica of it).")
        var plugin: String

        @Option(name: .long, help: "to-host, from-host or both.")
        var direction = "both"

        @Option(name: .customLong("for"), help: "How long it lasts, e.g. 3s (default: until `flowbus fault clear`).")
        var duration: String?

        @Option(name: .long, help: "Id of its rules (default: partition-<plugin>).")
        var id: String?

        func run() throws {
            guard let way = FaultPlanEvent.PartitionDirection(rawValue: direction) else {
                throw ValidationError("--direction is to-host, from-host or both; got \(direction)")
            }
            try Fault.play(.partition(plugin: plugin, direction: way, id: id ?? "partition-\(plugin)"), for: try Fault.duration(duration, "--for"),
                           name: "partition", runDirectory: global.runDirectory)
        }
    }
}
