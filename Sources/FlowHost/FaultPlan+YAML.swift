import Foundation
import MessagePath
import Supervision
import Yams

/// What is wrong with a plan file, saying where and what to write instead.
public struct FaultPlanError: Error, CustomStringConvertible, Equatable {
    public var description: String
    init(_ description: String) { self.description = description }
}

extension FaultPlan {
    /// The fault kinds a plan may name, each with the options it takes.
    static let kinds: [String: String] = [
        "drop": "service|key, share, session, peer, method, skip, limit, after",
        "delay": "service|key, ms, spread, distribution, jitter, and the targets of drop",
        "duplicate": "service|key, copies, and the targets of drop",
        "reorder": "service|key, window, and the targets of drop",
        "truncate": "service|key, bytes, and the targets of drop",
        "corrupt": "service|key, bytes, and the targets of drop",
        "stale": "key, and the targets of drop (Clone values only)",
        "hold-heartbeats": "service, peer, limit",
        "partition": "plugin, direction (to-host, from-host or both, the default)",
        "kill": "plugin and replica, or serving (a service prefix) and session",
        "stop": "plugin and replica, or serving and session (and the event's `for`, 5s if not given)",
        "clock": "plugin, replica (default: every one), offset (such as 30s or -5s), rate (1: real speed)",
    ]

    /// Reads a plan:
    ///
    /// ```yaml
    /// name: lossy-coordinators
    /// seed: 7                    # --seed overrides it
    /// duration: 20s              # how long `chaos run` plays (default: until the last event ends)
    /// faults:
    ///   - drop: {service: coord.app, share: 0.3}
    ///     at: 0s                 # default 0s
    ///     for: 10s               # default: to the end of the run
    ///   - kill: {plugin: coord-home}
    ///     at: 3s
    ///     id: f2                 # optional: the rule's name, which seeds its decisions (default f<n>)
    /// generate:                  # optional: more events drawn from the seed
    ///   count: 6
    ///   every: 2s                # mean gap (exponential)
    ///   for: 1s                  # how long each lasts
    ///   pick:                    # templates; a list of values picks one
    ///     - stop: {plugin: [vm-details, coord-home]}
    ///     - drop: {service: [vm., coord.], share: 0.5}
    /// ```
    public static func parse(yaml: String, seed override: UInt64? = nil) throws(FaultPlanError) -> FaultPlan {
        let document: Any?
        do {
            document = try Yams.load(yaml: yaml)
        } catch {
            throw FaultPlanError("the plan is not valid YAML: \(error)")
        }
        guard let top = document as? [String: Any] else {
            throw FaultPlanError("a plan is a YAML mapping with `faults:` (and optionally `name`, `seed`, `duration`, `generate`)")
        }
        let known: Set = ["name", "seed", "duration", "faults", "generate"]
        if let unknown = top.keys.first(where: { !known.contains($0) }) {
            throw FaultPlanError("the plan has an unknown entry `\(unknown)`; a plan has \(known.sorted().joined(separator: ", "))")
        }
        let seed: UInt64
        if let override { seed = override } else { seed = try Self.seed(top["seed"]) }
        var random = PlanRandom(seed: seed)
        var events: [FaultPlanEvent] = []
        for (index, entry) in try Self.list(top["faults"] ?? [Any](), "faults").enumerated() {
            events.append(try Self.event(entry, id: "f\(index + 1)", where: "faults[\(index)]", random: &random))
        }
        if let generate = top["generate"] {
            events += try Self.generated(generate, random: &random, first: events.count + 1)
        }
        let duration = try top["duration"].map { value throws(FaultPlanError) in try Self.milliseconds(value, "duration") }
        guard !events.isEmpty else {
            throw FaultPlanError("the plan has no fault: list some under `faults:` or describe them under `generate:`")
        }
        return FaultPlan(name: (top["name"] as? String) ?? "plan", seed: seed, durationMilliseconds: duration, events: events)
    }

    private static func seed(_ value: Any?) throws(FaultPlanError) -> UInt64 {
        guard let value else { return 1 }
        if let number = value as? Int, number >= 0 { return UInt64(number) }
        if let text = value as? String, let number = UInt64(text) { return number }
        throw FaultPlanError("`seed` is a whole number of 0 or more; got \(value)")
    }

    private static func list(_ value: Any, _ name: String) throws(FaultPlanError) -> [Any] {
        guard let list = value as? [Any] else { throw FaultPlanError("`\(name)` is a list of faults, each a mapping such as `- drop: {service: vm., share: 0.2}`") }
        return list
    }

    public static func milliseconds(_ value: Any, _ name: String) throws(FaultPlanError) -> Int64 {
        if let seconds = value as? Int, seconds >= 0 { return Int64(seconds) * 1000 }
        guard let text = value as? String, let duration = DurationText.parse(text) else {
            throw FaultPlanError("`\(name)` must be a duration: \(DurationText.hint); got \(value)")
        }
        let (seconds, attoseconds) = duration.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    /// A duration that may be negative: `-5s`, `30s`, `250ms`.
    public static func signedMilliseconds(_ text: String, _ name: String) throws(FaultPlanError) -> Int64 {
        let negative = text.hasPrefix("-")
        let magnitude = try milliseconds(String(text.drop(while: { $0 == "-" || $0 == "+" })), name)
        return negative ? -magnitude : magnitude
    }

    /// One `faults:` entry: a kind with its options, and `at` / `for`.
    private static func event(_ entry: Any, id: String, where place: String, random: inout PlanRandom) throws(FaultPlanError) -> FaultPlanEvent {
        guard let mapping = entry as? [String: Any] else {
            throw FaultPlanError("\(place) must be a mapping such as `drop: {service: vm., share: 0.2}`")
        }
        let kinds = mapping.keys.filter { Self.kinds[$0] != nil }
        guard kinds.count == 1, let kind = kinds.first else {
            throw FaultPlanError("\(place) must name one fault kind, one of \(Self.kinds.keys.sorted().joined(separator: ", ")); it has \(mapping.keys.sorted().joined(separator: ", "))")
        }
        if let unknown = mapping.keys.first(where: { $0 != kind && $0 != "at" && $0 != "for" && $0 != "id" }) {
            throw FaultPlanError("\(place) has an unknown entry `\(unknown)`; beside its kind an entry has `at`, `for` and `id`")
        }
        // A rule's id seeds its decisions: a plan written back (a shrunk one) names them to decide the same.
        var id = id
        if let named = mapping["id"] {
            guard let text = named as? String ?? (named as? Int).map(String.init), !text.isEmpty else {
                throw FaultPlanError("\(place).id is a name such as f3; got \(named)")
            }
            id = text
        }
        let options = try Options(mapping[kind], kind: kind, place: place, random: &random)
        try options.checkKnown()
        let at = try mapping["at"].map { value throws(FaultPlanError) in try Self.milliseconds(value, "\(place).at") } ?? 0
        var duration = try mapping["for"].map { value throws(FaultPlanError) in try Self.milliseconds(value, "\(place).for") }
        let fault: FaultPlanEvent.Fault
        switch kind {
        case "kill", "stop":
            if let service = try options.optionalString("serving") {
                guard try options.optionalString("plugin") == nil, try options.int("replica") == nil else {
                    throw FaultPlanError("\(place).\(kind) names a process either by `plugin` (and `replica`) or by `serving` (and `session`), not both")
                }
                let session = try options.optionalString("session")
                fault = kind == "kill" ? .killServing(service: service, session: session) : .stopServing(service: service, session: session)
            } else {
                guard try options.optionalString("session") == nil else {
                    throw FaultPlanError("\(place).\(kind).session goes with `serving: SERVICE` (the process that last answered it in that session)")
                }
                let plugin = try options.string("plugin")
                let replica = try options.int("replica") ?? 0
                fault = kind == "kill" ? .kill(plugin: plugin, replica: replica) : .stop(plugin: plugin, replica: replica)
            }
            if kind == "stop" { duration = duration ?? 5000 }
        case "partition":
            let text = try options.optionalString("direction") ?? "both"
            guard let direction = FaultPlanEvent.PartitionDirection(rawValue: text) else {
                throw FaultPlanError("\(place).partition.direction is to-host, from-host or both; got \(text)")
            }
            fault = .partition(plugin: try options.string("plugin"), direction: direction, id: id)
        case "clock":
            let offset = try options.signedMilliseconds("offset") ?? 0
            let skew = ClockSkew(offsetMilliseconds: offset, rate: try options.double("rate") ?? 1)
            do { try skew.validate() } catch { throw FaultPlanError("\(place): \(error.description)") }
            guard !skew.isNone else {
                throw FaultPlanError("\(place).clock changes nothing: give an `offset` (such as 30s or -5s) or a `rate` other than 1")
            }
            fault = .clock(plugin: try options.string("plugin"), replica: try options.int("replica"), skew: skew)
        case "hold-heartbeats":
            fault = .rules([FaultRule(id: id, scope: .heartbeat, prefix: try options.string("service"), action: .drop,
                                      peer: try options.optionalString("peer"), limit: try options.int("limit"))])
        default:
            fault = .rules([try options.rule(kind: kind, id: id)])
        }
        let event = FaultPlanEvent(atMilliseconds: at, durationMilliseconds: duration, fault: fault)
        if case .rules(let rules) = fault {
            for rule in rules {
                do { try rule.validate() } catch { throw FaultPlanError("\(place): \(error.description)") }
            }
        }
        return event
    }

    /// `generate:` — `count` events at exponential gaps of mean `every`, each lasting `for`, each a
    /// template of `pick` drawn from the seed.
    private static func generated(_ value: Any, random: inout PlanRandom, first: Int) throws(FaultPlanError) -> [FaultPlanEvent] {
        guard let mapping = value as? [String: Any] else { throw FaultPlanError("`generate` is a mapping with count, every, for and pick") }
        guard let count = mapping["count"] as? Int, (1...10_000).contains(count) else {
            throw FaultPlanError("`generate.count` is the number of events to draw, 1 to 10,000")
        }
        let every = try Self.milliseconds(mapping["every"] ?? "1s", "generate.every")
        let length = try mapping["for"].map { value throws(FaultPlanError) in try Self.milliseconds(value, "generate.for") }
        let templates = try Self.list(mapping["pick"] ?? [Any](), "generate.pick")
        guard !templates.isEmpty else { throw FaultPlanError("`generate.pick` lists the fault templates to draw from") }
        var events: [FaultPlanEvent] = []
        var at: Double = 0
        for index in 0..<count {
            at += -Double(every) * log1pNegative(random.unit())
            guard var template = templates[random.below(templates.count)] as? [String: Any] else {
                throw FaultPlanError("each `generate.pick` entry is a fault such as `kill: {plugin: coord-home}`")
            }
            template["at"] = "\(Int64(at))ms"
            if let length, template["for"] == nil { template["for"] = "\(length)ms" }
            events.append(try event(template, id: "g\(first + index)", where: "generate.pick (event \(index + 1))", random: &random))
        }
        return events
    }

    /// ln(1 - u), for exponential gaps.
    private static func log1pNegative(_ u: Double) -> Double {
        var x = 1 - u
        if x <= 0 { x = .leastNonzeroMagnitude }
        return Foundation.log(x)
    }
}

/// The options of one fault entry, read once each; a list value picks one of its items.
private struct Options {
    let values: [String: Any]
    let kind: String
    let place: String
    private var picked: [String: Any] = [:]

    init(_ value: Any?, kind: String, place: String, random: inout PlanRandom) throws(FaultPlanError) {
        guard let values = (value ?? [String: Any]()) as? [String: Any] else {
            throw FaultPlanError("\(place).\(kind) takes a mapping of options (\(FaultPlan.kinds[kind] ?? "")), such as `\(kind): {service: vm.}`")
        }
        self.values = values
        self.kind = kind
        self.place = place
        for (key, value) in values.sorted(by: { $0.key < $1.key }) {
            if let choices = value as? [Any], key != "after" {
                guard !choices.isEmpty else { throw FaultPlanError("\(place).\(kind).\(key) lists no value to pick from") }
                picked[key] = choices[random.below(choices.count)]
            } else {
                picked[key] = value
            }
        }
    }

    private func value(_ key: String) -> Any? { picked[key] }

    func string(_ key: String) throws(FaultPlanError) -> String {
        guard let text = try optionalString(key) else { throw FaultPlanError("\(place).\(kind) needs `\(key)`") }
        return text
    }

    func optionalString(_ key: String) throws(FaultPlanError) -> String? {
        guard let value = value(key) else { return nil }
        if let text = value as? String { return text }
        throw FaultPlanError("\(place).\(kind).\(key) is text; got \(value)")
    }

    func int(_ key: String) throws(FaultPlanError) -> Int? {
        guard let value = value(key) else { return nil }
        if let number = value as? Int { return number }
        throw FaultPlanError("\(place).\(kind).\(key) is a whole number; got \(value)")
    }

    /// A duration that may be negative (`-5s`); a bare number is seconds.
    func signedMilliseconds(_ key: String) throws(FaultPlanError) -> Int64? {
        guard let value = value(key) else { return nil }
        if let seconds = value as? Int { return Int64(seconds) * 1000 }
        guard let text = value as? String else { throw FaultPlanError("\(place).\(kind).\(key) is a duration such as 30s or -5s; got \(value)") }
        return try FaultPlan.signedMilliseconds(text, "\(place).\(kind).\(key)")
    }

    func double(_ key: String) throws(FaultPlanError) -> Double? {
        guard let value = value(key) else { return nil }
        if let number = value as? Double { return number }
        if let number = value as? Int { return Double(number) }
        throw FaultPlanError("\(place).\(kind).\(key) is a number; got \(value)")
    }

    /// A message rule of `kind` (drop, delay, duplicate, reorder, truncate, corrupt).
    func rule(kind: String, id: String) throws(FaultPlanError) -> FaultRule {
        let service = try optionalString("service")
        let key = try optionalString("key")
        guard (service == nil) != (key == nil) else {
            throw FaultPlanError("\(place).\(kind) needs exactly one of `service: PREFIX` or `key: PREFIX`")
        }
        let action: FaultAction
        switch kind {
        case "drop": action = .drop
        case "delay":
            let name = try optionalString("distribution") ?? "constant"
            guard let distribution = FaultDelay.Distribution(rawValue: name) else {
                throw FaultPlanError("\(place).delay.distribution is constant, uniform or exponential; got \(name)")
            }
            guard let base = try double("ms") else { throw FaultPlanError("\(place).delay needs `ms`, the delay's base in milliseconds") }
            action = .delay(FaultDelay(distribution, base: base, spread: try double("spread") ?? 0, jitter: try double("jitter") ?? 0))
        case "duplicate": action = .duplicate(copies: try int("copies") ?? 1)
        case "reorder": action = .reorder(window: try int("window") ?? 8)
        case "truncate": action = .truncate(bytes: try int("bytes") ?? 4)
        case "stale": action = .stale
        default: action = .corrupt(bytes: try int("bytes") ?? 1)
        }
        var after: FaultTrigger?
        if let trigger = values["after"] {
            guard let mapping = trigger as? [String: Any], let prefix = mapping["service"] as? String else {
                throw FaultPlanError("\(place).\(kind).after is a mapping such as `{service: vm.checkout, method: pay, count: 3}`")
            }
            after = FaultTrigger(prefix: prefix, method: mapping["method"] as? String, count: mapping["count"] as? Int ?? 1)
        }
        return FaultRule(
            id: id, scope: service != nil ? .service : .key, prefix: service ?? key ?? "", action: action,
            share: try double("share") ?? 1, session: try optionalString("session"), peer: try optionalString("peer"),
            method: try optionalString("method"), skip: try int("skip") ?? 0, limit: try int("limit"), after: after)
    }

    /// Throws when an option was given that this kind does not take (a typo would otherwise be ignored).
    func checkKnown() throws(FaultPlanError) {
        let accepted: Set<String> = switch kind {
        case "kill", "stop": ["plugin", "replica", "serving", "session"]
        case "partition": ["plugin", "direction"]
        case "clock": ["plugin", "replica", "offset", "rate"]
        case "hold-heartbeats": ["service", "peer", "limit"]
        default: ["service", "key", "share", "session", "peer", "method", "skip", "limit", "after", "ms", "spread", "distribution", "jitter", "copies", "window", "bytes"]
        }
        if let unknown = values.keys.sorted().first(where: { !accepted.contains($0) }) {
            throw FaultPlanError("\(place).\(kind) has an unknown option `\(unknown)`; it takes \(FaultPlan.kinds[kind] ?? "")")
        }
    }
}

/// The plan's own draws (generated events and picked values), from its seed.
struct PlanRandom {
    private var generator: SplitMix64

    init(seed: UInt64) { generator = SplitMix64(seed: seed ^ 0x5EED_0F_F1A7) }

    mutating func unit() -> Double { generator.nextUnitDouble() }

    mutating func below(_ count: Int) -> Int { Int(generator.next() % UInt64(count)) }
}
