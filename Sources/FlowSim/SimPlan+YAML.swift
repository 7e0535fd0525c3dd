import FlowClient
import Foundation
import Supervision
import Yams

extension SimPlan {
    static let entries = ["name", "seed", "journeys", "setup", "think", "users", "rate", "stages", "duration", "journey-limit", "data",
                          "thresholds", "step-timeout"]

    /// Reads a plan; script paths are relative to `directory` (the plan's own folder):
    ///
    /// ```yaml
    /// name: checkout-mix
    /// seed: 7                          # --seed overrides it
    /// journeys:                        # picked by weight for each journey a user plays
    ///   - {script: ../Journeys/expense-report.yaml, weight: 3}
    ///   - {script: ../Journeys/forgot-password.yaml, weight: 1}
    /// setup: ../Journeys/sign-up.yaml  # optional: played once per user first
    /// think: {exponential: 5s}         # or {constant: 1s}, {uniform: [1s, 3s]}, {lognormal: {median: 2s, sigma: 0.5}}
    /// users: 100                       # closed model: this many users, each playing journey after journey
    /// rate: 20                         # or an open model: arrivals per second, one journey each
    /// stages:                          # or ramps: {users: N, over: 10s, hold: 30s} (or {rate: R, …})
    ///   - {users: 50, over: 10s, hold: 20s}
    /// duration: 60s                    # default: the stages' length, else 30s
    /// journey-limit: 1000              # optional: stop once this many journeys ended
    /// data:                            # optional: user i gets entry i % count as variables
    ///   - {email: user1@example.com, password: secret1}
    /// step-timeout: 20s                # the longest a step waits (default 20s)
    /// thresholds:                      # any that fails makes the exit code 1
    ///   - p99(logIn→home) < 50ms
    ///   - errors < 0.1%
    /// ```
    /// `scripts`: the journeys' texts by the path the plan names them with, instead of reading
    /// files (an agent of a run across machines gets them from the run's coordinator).
    public static func parse(
        yaml: String, directory: String, seed override: UInt64? = nil, scripts: [String: String]? = nil
    ) throws(SimPlanError) -> SimPlan {
        let source = ScriptSource(directory: directory, given: scripts)
        let document: Any?
        do {
            document = try Yams.load(yaml: yaml)
        } catch {
            throw SimPlanError("the plan is not valid YAML: \(error)")
        }
        guard let top = document as? [String: Any] else {
            throw SimPlanError("a sim plan is a YAML mapping with `journeys:` and `users:` or `rate:` (see `flowbus sim --help`)")
        }
        if let unknown = top.keys.sorted().first(where: { !entries.contains($0) }) {
            throw SimPlanError("the plan has an unknown entry `\(unknown)`; a plan has \(entries.joined(separator: ", "))")
        }
        let seed: UInt64
        if let override { seed = override } else if let value = top["seed"] { seed = try Self.seed(value) } else { seed = 1 }
        let journeys = try Self.journeys(top["journeys"], source: source)
        let setup = try top["setup"].map { value throws(SimPlanError) -> DriveScript in
            guard let path = value as? String else { throw SimPlanError("`setup` is the path of a drive script") }
            return try Self.script(path, source: source)
        }
        let think = try top["think"].map { value throws(SimPlanError) in try Self.think(value) } ?? ThinkTime.none
        let load = try Self.load(top)
        let duration = try top["duration"].map { value throws(SimPlanError) in try Self.duration(value, "duration") }
            ?? (load.length > .zero ? load.length : .seconds(30))
        var limit: Int?
        if let value = top["journey-limit"] {
            guard let number = value as? Int, number > 0 else { throw SimPlanError("`journey-limit` is a whole number above 0; got \(value)") }
            limit = number
        }
        var data: [[String: String]] = []
        if let value = top["data"] {
            guard let list = value as? [[String: Any]], !list.isEmpty else {
                throw SimPlanError("`data` is a list of mappings of variables, such as `- {email: user1@example.com, password: secret1}`")
            }
            data = list.map { $0.mapValues { "\($0)" } }
        }
        var thresholds: [Threshold] = []
        if let value = top["thresholds"] {
            guard let list = value as? [String] else {
                throw SimPlanError("`thresholds` is a list of rules such as `- p99(logIn→home) < 50ms` (quote one that YAML misreads)")
            }
            thresholds = try list.map { text throws(SimPlanError) in try Threshold.parse(text) }
        }
        let stepTimeout = try top["step-timeout"].map { value throws(SimPlanError) in try Self.duration(value, "step-timeout") } ?? .seconds(20)
        return SimPlan(
            name: (top["name"] as? String) ?? "sim", seed: seed, journeys: journeys, setup: setup, think: think, load: load,
            duration: duration, journeyLimit: limit, data: data, thresholds: thresholds, stepTimeout: stepTimeout, text: yaml,
            scripts: source.texts)
    }

    public static func load(path: String, seed: UInt64? = nil) throws(SimPlanError) -> SimPlan {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw SimPlanError("cannot read the plan \(path); check the path")
        }
        do {
            return try parse(yaml: String(decoding: data, as: UTF8.self), directory: (path as NSString).deletingLastPathComponent, seed: seed)
        } catch {
            throw SimPlanError("\(path): \(error.description)")
        }
    }

    private static func seed(_ value: Any) throws(SimPlanError) -> UInt64 {
        if let number = value as? Int, number >= 0 { return UInt64(number) }
        if let text = value as? String, let number = UInt64(text) { return number }
        throw SimPlanError("`seed` is a whole number of 0 or more; got \(value)")
    }

    static func duration(_ value: Any, _ name: String) throws(SimPlanError) -> Duration {
        if let seconds = value as? Int, seconds >= 0 { return .seconds(seconds) }
        guard let text = value as? String, let duration = DurationText.parse(text) else {
            throw SimPlanError("`\(name)` must be a duration: \(DurationText.hint); got \(value)")
        }
        return duration
    }

    private static func script(_ path: String, source: ScriptSource) throws(SimPlanError) -> DriveScript {
        do {
            let script = try DriveScript.parse(try source.text(path), name: source.name(path))
            for step in script.steps {
                if case .attach = step.step {
                    throw SimPlanError("\(path): a simulated journey opens its own session; replace `attach` with `- open: {}`")
                }
                if case .keys = step.step { throw SimPlanError("\(path): `keys` steps need the terminal client; a simulated user sends intents") }
                if case .see = step.step { throw SimPlanError("\(path): `see` steps need the terminal client; use `expect`") }
            }
            return script
        } catch let error as SimPlanError {
            throw error
        } catch {
            throw SimPlanError("journey \(path): \(error)")
        }
    }

    private static func journeys(_ value: Any?, source: ScriptSource) throws(SimPlanError) -> [WeightedJourney] {
        guard let list = value as? [Any], !list.isEmpty else {
            throw SimPlanError("the plan names no journeys: list them under `journeys:`, such as `- {script: ../Journeys/expense-report.yaml, weight: 1}`")
        }
        var journeys: [WeightedJourney] = []
        for (index, entry) in list.enumerated() {
            let path: String
            var weight = 1.0
            if let text = entry as? String {
                path = text
            } else if let mapping = entry as? [String: Any], let text = mapping["script"] as? String {
                path = text
                if let unknown = mapping.keys.sorted().first(where: { $0 != "script" && $0 != "weight" }) {
                    throw SimPlanError("journeys[\(index)] has an unknown entry `\(unknown)`; a journey has script and weight")
                }
                if let value = mapping["weight"] {
                    guard let number = (value as? Double) ?? (value as? Int).map(Double.init), number > 0 else {
                        throw SimPlanError("journeys[\(index)]: `weight` is a number above 0; got \(value)")
                    }
                    weight = number
                }
            } else {
                throw SimPlanError("journeys[\(index)] is a script path or `{script: PATH, weight: N}`")
            }
            let name = ((path as NSString).lastPathComponent as NSString).deletingPathExtension
            journeys.append(WeightedJourney(name: name, script: try script(path, source: source), weight: weight))
        }
        return journeys
    }

    private static func think(_ value: Any) throws(SimPlanError) -> ThinkTime {
        let hint = "`think` is one of {constant: 1s}, {uniform: [1s, 3s]}, {exponential: 5s}, {lognormal: {median: 2s, sigma: 0.5}} or none"
        if let text = value as? String, text == "none" { return .none }
        guard let mapping = value as? [String: Any], mapping.count == 1, let (kind, body) = mapping.first else { throw SimPlanError(hint) }
        switch kind {
        case "constant": return .constant(try duration(body, "think.constant"))
        case "exponential": return .exponential(mean: try duration(body, "think.exponential"))
        case "uniform":
            guard let pair = body as? [Any], pair.count == 2 else { throw SimPlanError("`think.uniform` is [LOW, HIGH], such as [1s, 3s]") }
            let low = try duration(pair[0], "think.uniform"), high = try duration(pair[1], "think.uniform")
            guard low <= high else { throw SimPlanError("`think.uniform`: \(low) is above \(high); write the lower first") }
            return .uniform(low, high)
        case "lognormal":
            guard let options = body as? [String: Any], let median = options["median"], let sigma = (options["sigma"] as? Double) ?? (options["sigma"] as? Int).map(Double.init),
                  sigma >= 0
            else { throw SimPlanError("`think.lognormal` is {median: 2s, sigma: 0.5} (sigma 0 or more)") }
            return .logNormal(median: try duration(median, "think.lognormal.median"), sigma: sigma)
        default:
            throw SimPlanError(hint)
        }
    }

    private static func load(_ top: [String: Any]) throws(SimPlanError) -> LoadModel {
        let given = ["users", "rate", "stages"].filter { top[$0] != nil }
        guard given.count == 1 else {
            throw SimPlanError(given.isEmpty
                ? "the plan says no load: give `users: N` (closed model), `rate: R` (open model, arrivals per second) or `stages:`"
                : "the plan gives \(given.joined(separator: " and ")): give only one of users, rate or stages")
        }
        if let users = top["users"] {
            guard let count = users as? Int, count > 0 else { throw SimPlanError("`users` is a whole number above 0; got \(users)") }
            return .closed([LoadModel.Stage(target: Double(count))])
        }
        if let rate = top["rate"] {
            guard let value = (rate as? Double) ?? (rate as? Int).map(Double.init), value > 0 else {
                throw SimPlanError("`rate` is arrivals per second, a number above 0; got \(rate)")
            }
            return .open([LoadModel.Stage(target: value)])
        }
        guard let list = top["stages"] as? [[String: Any]], !list.isEmpty else {
            throw SimPlanError("`stages` is a list such as `- {users: 50, over: 10s, hold: 30s}` or `- {rate: 20, over: 10s}`")
        }
        var stages: [LoadModel.Stage] = []
        var open: Bool?
        for (index, entry) in list.enumerated() {
            if let unknown = entry.keys.sorted().first(where: { !["users", "rate", "over", "hold"].contains($0) }) {
                throw SimPlanError("stages[\(index)] has an unknown entry `\(unknown)`; a stage has users or rate, over and hold")
            }
            let isRate = entry["rate"] != nil
            guard isRate != (entry["users"] != nil) else { throw SimPlanError("stages[\(index)] gives users or rate (one of them)") }
            if let open, open != isRate { throw SimPlanError("stages[\(index)]: every stage gives users, or every stage gives rate, not both") }
            open = isRate
            let raw = entry[isRate ? "rate" : "users"]!
            guard let target = (raw as? Double) ?? (raw as? Int).map(Double.init), target >= 0 else {
                throw SimPlanError("stages[\(index)]: \(isRate ? "rate" : "users") is a number of 0 or more; got \(raw)")
            }
            stages.append(LoadModel.Stage(
                target: target, over: try entry["over"].map { value throws(SimPlanError) in try duration(value, "stages[\(index)].over") } ?? .zero,
                hold: try entry["hold"].map { value throws(SimPlanError) in try duration(value, "stages[\(index)].hold") } ?? .zero))
        }
        return open == true ? .open(stages) : .closed(stages)
    }
}

/// Where a plan's journeys come from: files beside the plan, or the texts a run's coordinator
/// sent. Keeps each text under the path the plan wrote, so the plan travels whole.
final class ScriptSource {
    let directory: String
    let given: [String: String]?
    private(set) var texts: [String: String] = [:]

    init(directory: String, given: [String: String]?) {
        self.directory = directory
        self.given = given
    }

    func name(_ path: String) -> String {
        given == nil ? full(path) : path
    }

    private func full(_ path: String) -> String {
        path.hasPrefix("/") ? path : (directory as NSString).appendingPathComponent(path)
    }

    func text(_ path: String) throws(SimPlanError) -> String {
        if let known = texts[path] { return known }
        let text: String
        if let given {
            guard let sent = given[path] else { throw SimPlanError("journey \(path): the run's coordinator did not send it") }
            text = sent
        } else {
            guard let data = FileManager.default.contents(atPath: full(path)) else {
                throw SimPlanError("journey \(path): cannot read \(full(path)); check the path (relative to the plan's folder)")
            }
            text = String(decoding: data, as: UTF8.self)
        }
        texts[path] = text
        return text
    }
}
