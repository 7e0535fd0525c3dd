import ArgumentParser
import FlowHost
import Foundation
import MessagePath

struct Fault: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Sets, lists and clears faults while the host runs: rules in its message paths, and kills, stops, clock skews and partitions of its plugins.",
        discussion: """
            Each rule acts on the MDP requests of a service prefix (--service) or the Clone writes of a \
            key prefix (--key), narrowed by --session, --peer, --method, --skip and --limit, on a --share \
            of them drawn from the host's fault seed: the same seed and rules make the same decisions \
            (`flowbus fault decisions`). kill, stop, clock and partition aim at a plugin's process, by name \
            or as the one serving a session, now and beside any plan; `flowbus fault clear` ends them all.
            """,
        subcommands: [Drop.self, Delay.self, Duplicate.self, Reorder.self, Truncate.self, Corrupt.self, Stale.self, HoldHeartbeats.self,
                      Kill.self, Stop.self, Clock.self, Partition.self,
                      Plan.self, List.self, Decisions.self, Clear.self]
    )

    /// Which messages a rule acts on; shared by every kind of rule.
    struct Target: ParsableArguments {
        @Option(name: .long, help: "MDP service name prefix, e.g. `vm.` or `coord.app`.")
        var service: String?

        @Option(name: .long, help: "Clone key prefix, e.g. `/s/` or `/s/<session>/nav`.")
        var key: String?

        @Option(name: .long, help: "Share of matching messages to act on, from 0 to 1.")
        var share: Double = 1

        @Option(name: .long, help: "Only the messages of this session.")
        var session: String?

        @Option(name: .long, help: "Only messages from peers whose User-Id starts with this, e.g. `plugin:coord-home` or `client:`.")
        var peer: String?

        @Option(name: .long, help: "Only intents with this action, or calls with this method, e.g. `logIn`.")
        var method: String?

        @Option(name: .long, help: "Let the first N matching messages pass (with --limit 1: only the N+1th).")
        var skip: Int = 0

        @Option(name: .long, help: "Act at most N times, then let everything pass.")
        var limit: Int?

        @Option(name: .long, help: "Rule id (default: <kind>-<prefix>); setting the same id replaces the rule.")
        var id: String?

        func validate() throws {
            guard (service == nil) != (key == nil) else {
                throw ValidationError("give exactly one of --service PREFIX or --key PREFIX")
            }
            guard (0...1).contains(share) else {
                throw ValidationError("--share is a number from 0 to 1 (0.25 acts on a quarter of the messages); got \(share)")
            }
        }

        func rule(_ action: FaultAction, scope: FaultScope? = nil) -> FaultRule {
            let prefix = service ?? key ?? ""
            return FaultRule(
                id: id ?? "\(action.name)-\(prefix)", scope: scope ?? (service != nil ? .service : .key), prefix: prefix, action: action,
                share: share, session: session, peer: peer, method: method, skip: skip, limit: limit)
        }
    }

    /// Sends `rule` to the host and says what it now does.
    static func install(_ rule: FaultRule, runDirectory: RunDirectory) throws {
        do {
            try rule.validate()
        } catch {
            throw ValidationError(error.description)
        }
        let _: Empty = try ControlClient(runDirectory: runDirectory).send(ControlRequest(command: .faultSet, rule: rule))
        print("fault rule \(rule.id): \(describe(rule))")
    }

    /// `delaying 50% of MDP requests to services starting with vm. by 100 ms`
    static func describe(_ rule: FaultRule) -> String {
        let what = switch rule.scope {
        case .service: "MDP requests to services"
        case .key: "Clone writes of keys"
        case .heartbeat: "heartbeats of the workers of services"
        case .worker: "commands of the workers of services"
        case .process: "processes"
        }
        var text = "\(verb(rule.action)) \(Int((rule.share * 100).rounded()))% of \(what) starting with \(rule.prefix)"
        if let session = rule.session { text += " in session \(session)" }
        if let peer = rule.peer { text += " from \(peer)*" }
        if let method = rule.method { text += " doing \(method)" }
        if rule.skip > 0 { text += " after the first \(rule.skip)" }
        if let limit = rule.limit { text += ", at most \(limit) times" }
        return text + detail(rule.action)
    }

    static func verb(_ action: FaultAction) -> String {
        switch action {
        case .drop: "dropping"
        case .delay: "delaying"
        case .duplicate: "duplicating"
        case .reorder: "reordering"
        case .truncate: "truncating"
        case .corrupt: "corrupting"
        case .stale: "serving the previous value again after"
        }
    }

    static func detail(_ action: FaultAction) -> String {
        switch action {
        case .drop: ""
        case .delay(let delay):
            " by \(delay.distribution.rawValue) \(delay.base) ms" + (delay.spread > 0 ? " + \(delay.spread) ms spread" : "")
                + (delay.jitter > 0 ? " ± \(delay.jitter) ms" : "")
        case .duplicate(let copies): ", \(copies) extra cop\(copies == 1 ? "y" : "ies") each"
        case .reorder(let window): ", each overtaken by up to \(window) later ones"
        case .truncate(let bytes): " to \(bytes) bytes"
        case .corrupt(let bytes): ", \(bytes) byte\(bytes == 1 ? "" : "s") flipped each"
        case .stale: ""
        }
    }

    struct Drop: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Drops a share of the MDP requests of a service prefix, or of the Clone writes of a key prefix.",
            discussion: "Examples: `flowbus fault drop --service vm. --share 0.5`; `flowbus fault drop --key /s/ --share 1 --id blackout`."
        )

        @OptionGroup var global: GlobalOptions
        @OptionGroup var target: Target

        func run() throws { try Fault.install(target.rule(.drop), runDirectory: global.runDirectory) }
    }

    struct Delay: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delays matching messages: a fixed time, or drawn from a uniform or exponential distribution, with jitter.",
            discussion: "Examples: `flowbus fault delay --service vm.home --ms 200`; `flowbus fault delay --key /s/ --ms 5 --spread 50 --distribution exponential --share 0.2`."
        )

        @OptionGroup var global: GlobalOptions
        @OptionGroup var target: Target

        @Option(name: .long, help: "The delay's base, in milliseconds.")
        var ms: Double

        @Option(name: .long, help: "Added on top: uniform in 0…SPREAD ms, or exponential of mean SPREAD ms (capped at ten means).")
        var spread: Double = 0

        @Option(name: .long, help: "constant, uniform or exponential.")
        var distribution: String = "constant"

        @Option(name: .long, help: "Uniform jitter of ± this many milliseconds.")
        var jitter: Double = 0

        func run() throws {
            guard let kind = FaultDelay.Distribution(rawValue: distribution) else {
                throw ValidationError("--distribution is one of constant, uniform, exponential; got \(distribution)")
            }
            let kindUsed: FaultDelay.Distribution = spread > 0 && kind == .constant ? .uniform : kind
            try Fault.install(target.rule(.delay(FaultDelay(kindUsed, base: ms, spread: spread, jitter: jitter))), runDirectory: global.runDirectory)
        }
    }

    struct Duplicate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delivers matching messages more than once.",
            discussion: "Example: `flowbus fault duplicate --service vm. --share 0.25`.")

        @OptionGroup var global: GlobalOptions
        @OptionGroup var target: Target

        @Option(name: .long, help: "Extra copies of each (1 to 16).")
        var copies: Int = 1

        func run() throws { try Fault.install(target.rule(.duplicate(copies: copies)), runDirectory: global.runDirectory) }
    }

    struct Reorder: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Holds matching messages back until up to WINDOW later ones have overtaken them (250 ms at most).",
            discussion: "Example: `flowbus fault reorder --key /s/ --window 8 --share 0.3`.")

        @OptionGroup var global: GlobalOptions
        @OptionGroup var target: Target

        @Option(name: .long, help: "How many later messages may overtake one (1 to 64).")
        var window: Int = 8

        func run() throws { try Fault.install(target.rule(.reorder(window: window)), runDirectory: global.runDirectory) }
    }

    struct Truncate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Cuts the body of matching requests, or the value of matching writes, to BYTES bytes.")

        @OptionGroup var global: GlobalOptions
        @OptionGroup var target: Target

        @Option(name: .long, help: "Bytes kept.")
        var bytes: Int = 4

        func run() throws { try Fault.install(target.rule(.truncate(bytes: bytes)), runDirectory: global.runDirectory) }
    }

    struct Corrupt: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Flips BYTES bytes of the body of matching requests, or of the value of matching writes.")

        @OptionGroup var global: GlobalOptions
        @OptionGroup var target: Target

        @Option(name: .long, help: "Bytes flipped in each.")
        var bytes: Int = 1

        func run() throws { try Fault.install(target.rule(.corrupt(bytes: bytes)), runDirectory: global.runDirectory) }
    }

    struct Stale: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "After each matching Clone write, serves subscribers the key's previous value again, as a lagging replica would.",
            discussion: """
                The map keeps the new value (a snapshot or the key's next write puts subscribers right); a client must \
                not show the older value (its writer's key_version says it is older). Example: \
                `flowbus fault stale --key /s/ --share 0.3`.
                """)

        @OptionGroup var global: GlobalOptions
        @OptionGroup var target: Target

        func run() throws { try Fault.install(target.rule(.stale), runDirectory: global.runDirectory) }
    }

    struct HoldHeartbeats: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "hold-heartbeats",
            abstract: "Holds back the heartbeats the workers of a service send the broker, so it takes them for dead.",
            discussion: "Example: `flowbus fault hold-heartbeats --service vm.checkout --limit 20`; `flowbus fault clear heartbeat-vm.checkout` ends it.")

        @OptionGroup var global: GlobalOptions

        @Option(name: .long, help: "Service name prefix of the workers.")
        var service: String

        @Option(name: .long, help: "Only workers whose User-Id starts with this, e.g. `plugin:vm-checkout`.")
        var peer: String?

        @Option(name: .long, help: "Hold at most N heartbeats.")
        var limit: Int?

        @Option(name: .long, help: "Rule id (default: heartbeat-<service>).")
        var id: String?

        func run() throws {
            let rule = FaultRule(id: id ?? "heartbeat-\(service)", scope: .heartbeat, prefix: service, action: .drop, peer: peer, limit: limit)
            try Fault.install(rule, runDirectory: global.runDirectory)
        }
    }

    struct Plan: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Plays a fault plan (YAML) on the running host: rules switched on and off, plugins killed or stopped, partitions, at their times.",
            discussion: "The same plan and seed make the same decisions on the same traffic. `--dry-run` prints the timeline the seed gives without playing it. Plans are described in the README (Fault injection).")

        @OptionGroup var global: GlobalOptions

        @Argument(help: "The plan file.")
        var file: String

        @Option(name: .long, help: "The seed of the decisions (default: the plan's `seed`).")
        var seed: UInt64?

        @Flag(name: .long, help: "Print the timeline and stop.")
        var dryRun = false

        func run() throws {
            let plan = try Fault.loadPlan(file, seed: seed)
            print("plan \(plan.name), seed \(plan.seed): \(plan.events.count) events")
            for event in plan.events { print("  " + event.summary) }
            guard !dryRun else { return }
            let _: Empty = try ControlClient(runDirectory: global.runDirectory).send(ControlRequest(command: .faultPlan, plan: plan))
            print("playing; `flowbus fault decisions` lists what it does, `flowbus fault clear` ends it")
        }
    }

    /// Reads and checks a plan file, or says what is wrong with it.
    static func loadPlan(_ file: String, seed: UInt64?) throws -> FaultPlan {
        let text: String
        do {
            text = try String(contentsOfFile: file, encoding: .utf8)
        } catch {
            throw PlanFileError(description: "cannot read the plan \(file): \(error.localizedDescription); give the path of a plan YAML file")
        }
        do {
            return try FaultPlan.parse(yaml: text, seed: seed)
        } catch {
            throw PlanFileError(description: "\(file): \(error.description)")
        }
    }

    struct PlanFileError: Error, CustomStringConvertible {
        var description: String
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Lists the fault rules with what each has done.")

        @OptionGroup var global: GlobalOptions

        @Flag(name: .long, help: "Print JSON.")
        var json = false

        func run() throws {
            let rules: [FaultRuleStatus] = try ControlClient(runDirectory: global.runDirectory).send(ControlRequest(command: .faultList))
            if json {
                print(String(decoding: try JSONEncoder.pretty.encode(rules), as: UTF8.self))
                return
            }
            if rules.isEmpty {
                print("no fault rules are set")
            }
            for status in rules {
                print("\(status.rule.id): \(Fault.describe(status.rule)) — matched \(status.matched), acted on \(status.fired)")
            }
        }
    }

    struct Decisions: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Prints the faults injected so far, one line each, oldest first: rule, the message's place among those it matched, the message, what was done.",
            discussion: "The lines leave out the time: two runs of the same rules and seed on the same traffic print the same lines.")

        @OptionGroup var global: GlobalOptions

        @Flag(name: .long, help: "Print JSON, with each decision's time.")
        var json = false

        @Option(name: .long, help: "Only the decisions after the first N.")
        var after: Int = 0

        func run() throws {
            let log: FaultDecisionLog = try ControlClient(runDirectory: global.runDirectory)
                .send(ControlRequest(command: .faultDecisions, after: after))
            if json {
                print(String(decoding: try JSONEncoder.pretty.encode(log), as: UTF8.self))
                return
            }
            for decision in log.decisions { print(decision.line) }
            let shown = log.decisions.count
            let older = log.total - after - shown
            if older > 0 { print("(\(older) older decisions were not kept; \(log.total) in all)") }
            if log.total == 0 { print("no fault has been injected (seed \(log.seed))") }
            if let plan = log.plan { print("plan \(plan) \(log.planFinished == true ? "ended" : "is playing")") }
        }
    }

    struct Clear: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Removes one fault rule, or all of them.")

        @OptionGroup var global: GlobalOptions

        @Argument(help: "The rule id; without it every rule is removed.")
        var id: String?

        func run() throws {
            let _: Empty = try ControlClient(runDirectory: global.runDirectory).send(ControlRequest(command: .faultClear, ruleID: id))
            print(id.map { "fault rule \($0) removed" } ?? "all fault rules removed")
        }
    }
}

extension JSONEncoder {
    static var pretty: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }
}
