import Foundation
import MessagePath

extension FaultPlan {
    /// The plan as YAML that `parse` reads back to the same events: each generated event written
    /// out on the timeline, with the id that seeds its decisions (an event of several rules that is
    /// not a partition, which no plan file makes, is written as one entry per rule). For a plan
    /// found by shrinking.
    public var yamlText: String {
        var lines = ["name: \(Self.quoted(name))", "seed: \(seed)"]
        if let durationMilliseconds { lines.append("duration: \(FaultPlanEvent.text(durationMilliseconds))") }
        lines.append("faults:")
        for event in events {
            for (kind, options, id) in Self.entries(event.fault) {
                lines.append("  - \(kind): {\(options.map { "\($0.0): \($0.1)" }.joined(separator: ", "))}")
                lines.append("    at: \(event.atMilliseconds)ms")
                if let duration = event.durationMilliseconds { lines.append("    for: \(duration)ms") }
                if let id { lines.append("    id: \(Self.quoted(id))") }
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The entries one event is written as: a kind, its options in order, and the id it was parsed with.
    private static func entries(_ fault: FaultPlanEvent.Fault) -> [(String, [(String, String)], String?)] {
        switch fault {
        case .kill(let plugin, let replica): return [("kill", [("plugin", quoted(plugin)), ("replica", "\(replica)")], nil)]
        case .stop(let plugin, let replica): return [("stop", [("plugin", quoted(plugin)), ("replica", "\(replica)")], nil)]
        case .killServing(let service, let session), .stopServing(let service, let session):
            var options = [("serving", quoted(service))]
            if let session { options.append(("session", quoted(session))) }
            if case .killServing = fault { return [("kill", options, nil)] }
            return [("stop", options, nil)]
        case .clock(let plugin, let replica, let skew):
            var options = [("plugin", quoted(plugin))]
            if let replica { options.append(("replica", "\(replica)")) }
            options.append(("offset", "\(skew.offsetMilliseconds)ms"))
            options.append(("rate", number(skew.rate)))
            return [("clock", options, nil)]
        case .partition(let plugin, let direction, let id):
            return [("partition", [("plugin", quoted(plugin)), ("direction", direction.rawValue)], id)]
        case .rules(let rules):
            // Runs recorded before partitions had a direction wrote them as their three rules.
            if let (plugin, id) = partition(rules) { return [("partition", [("plugin", quoted(plugin)), ("direction", "to-host")], id)] }
            return rules.map { rule in
                if rule.scope == .heartbeat {
                    var options = [("service", quoted(rule.prefix))]
                    if let peer = rule.peer { options.append(("peer", quoted(peer))) }
                    if let limit = rule.limit { options.append(("limit", "\(limit)")) }
                    return ("hold-heartbeats", options, rule.id)
                }
                return (rule.action.name, options(of: rule), rule.id)
            }
        }
    }

    /// The plugin and id of a partition's rules (`FaultPlanEvent.partitionRules`), if `rules` are one.
    private static func partition(_ rules: [FaultRule]) -> (String, String)? {
        guard rules.count == 3, let first = rules.first, first.id.hasSuffix("-requests"), let peer = first.peer,
              peer.hasPrefix("plugin:"), peer.hasSuffix("/") else { return nil }
        let id = String(first.id.dropLast("-requests".count))
        let plugin = String(peer.dropFirst("plugin:".count).dropLast())
        return FaultPlanEvent.partitionRules(plugin, id: id) == rules ? (plugin, id) : nil
    }

    private static func options(of rule: FaultRule) -> [(String, String)] {
        var options = [(rule.scope == .key ? "key" : "service", quoted(rule.prefix))]
        switch rule.action {
        case .drop: break
        case .delay(let delay):
            options += [("ms", number(delay.base)), ("distribution", delay.distribution.rawValue)]
            if delay.spread > 0 { options.append(("spread", number(delay.spread))) }
            if delay.jitter > 0 { options.append(("jitter", number(delay.jitter))) }
        case .duplicate(let copies): options.append(("copies", "\(copies)"))
        case .reorder(let window): options.append(("window", "\(window)"))
        case .truncate(let bytes), .corrupt(let bytes): options.append(("bytes", "\(bytes)"))
        case .stale: break
        }
        if rule.share < 1 { options.append(("share", number(rule.share))) }
        if let session = rule.session { options.append(("session", quoted(session))) }
        if let peer = rule.peer { options.append(("peer", quoted(peer))) }
        if let method = rule.method { options.append(("method", quoted(method))) }
        if rule.skip > 0 { options.append(("skip", "\(rule.skip)")) }
        if let limit = rule.limit { options.append(("limit", "\(limit)")) }
        if let after = rule.after {
            var trigger = [("service", quoted(after.prefix))]
            if let method = after.method { trigger.append(("method", quoted(method))) }
            trigger.append(("count", "\(after.count)"))
            options.append(("after", "{" + trigger.map { "\($0.0): \($0.1)" }.joined(separator: ", ") + "}"))
        }
        return options
    }

    /// A double as YAML reads it back exactly (shortest round-trip form).
    private static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : "\(value)"
    }

    /// A string in double quotes, so YAML never reads it as a number, a bool or a flow token.
    static func quoted(_ text: String) -> String {
        var escaped = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": escaped += "\\\""
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            default:
                if scalar.value < 0x20 { escaped += String(format: "\\u%04X", scalar.value) } else { escaped.unicodeScalars.append(scalar) }
            }
        }
        return escaped + "\""
    }
}
