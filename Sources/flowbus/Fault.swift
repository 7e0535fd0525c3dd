import ArgumentParser
import FlowHost
import Foundation
import MessagePath

struct Fault: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Sets, lists and clears fault rules in the host's message paths, while it runs.",
        subcommands: [Drop.self, List.self, Clear.self]
    )

    struct Drop: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Drops a share of the MDP requests of a service prefix, or of the Clone updates of a key prefix.",
            discussion: "Examples: `flowbus fault drop --service vm. --share 0.5`; `flowbus fault drop --key /s/ --share 1 --id blackout`."
        )

        @OptionGroup var global: GlobalOptions

        @Option(name: .long, help: "MDP service name prefix, e.g. `vm.` or `flowbus.echo`.")
        var service: String?

        @Option(name: .long, help: "Clone key prefix, e.g. `/s/` or `/demo/`.")
        var key: String?

        @Option(name: .long, help: "Share of matching messages to drop, from 0 to 1.")
        var share: Double = 1

        @Option(name: .long, help: "Rule id (default: drop-<prefix>); setting the same id replaces the rule.")
        var id: String?

        func validate() throws {
            guard (service == nil) != (key == nil) else {
                throw ValidationError("give exactly one of --service PREFIX or --key PREFIX")
            }
            guard (0...1).contains(share) else {
                throw ValidationError("--share is a number from 0 to 1 (0.25 drops a quarter); got \(share)")
            }
        }

        func run() throws {
            let scope: FaultScope = service != nil ? .service : .key
            let prefix = service ?? key ?? ""
            let rule = FaultRule(id: id ?? "drop-\(prefix)", scope: scope, prefix: prefix, action: .drop(share: share))
            let _: Empty = try ControlClient(runDirectory: global.runDirectory).send(ControlRequest(command: .faultSet, rule: rule))
            print("fault rule \(rule.id): dropping \(Int((share * 100).rounded()))% of \(scope == .service ? "MDP requests to services" : "Clone updates of keys") starting with \(prefix)")
        }
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
                let rule = status.rule
                switch rule.action {
                case .drop(let share):
                    print("\(rule.id): drop \(Int((share * 100).rounded()))% of \(rule.scope.rawValue) \(rule.prefix)* — matched \(status.matched), dropped \(status.dropped)")
                }
            }
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
