/// A session's history as a Mermaid `sequenceDiagram`: the clients, the processes that served
/// them (`coord-app`, `vm-checkout`…) and the session's state in Clone as participants; intents
/// and calls as arrows, replies as dashed arrows, states and navigation as arrows to Clone.
public enum MermaidSequence {
    public static func diagram(_ trace: SessionTrace) -> String {
        var cast = Cast()
        let targets = requestTargets(trace.events)
        // Processes are those that answered or wrote a value; every other requester is a client.
        var processes: [String] = []
        for event in trace.events where (event.kind == .reply || !event.isRequest && ![.refused, .dropped, .fault].contains(event.kind)) && !event.from.isEmpty {
            if !processes.contains(event.from) { processes.append(event.from) }
        }
        for event in trace.events where (event.isRequest || event.kind == .dropped || event.kind == .fault && event.service != nil)
            && !processes.contains(event.from) {
            cast.declare(event.from)
        }
        for process in processes { cast.declare(process) }
        for target in targets.values { cast.declare(target) }
        if trace.events.contains(where: { $0.kind == .refused }) { cast.declare(broker) }
        cast.declare(clone)

        var lines: [String] = []
        for (index, event) in trace.events.enumerated() {
            let label = escape(MermaidSequence.label(event))
            switch event.kind {
            case .intent, .call:
                lines.append("\(cast.id(event.from))->>\(cast.id(targets[index] ?? event.service ?? "?")): \(label)")
            case .dropped:
                lines.append("\(cast.id(event.from))-x\(cast.id(targets[index] ?? event.service ?? "?")): \(label)")
            case .fault:
                lines.append("Note over \(cast.id(event.service != nil ? event.from : clone)): ⚡ \(label)")
            case .reply:
                lines.append("\(cast.id(event.from))-->>\(cast.id(event.to ?? "?")): \(label)")
            case .refused:
                lines.append("\(cast.id(broker))--x\(cast.id(event.to ?? "?")): \(label)")
            case .navigation, .state, .record, .value:
                lines.append("\(cast.id(event.from.isEmpty ? clone : event.from))->>\(cast.id(clone)): \(label)")
            case .deleted:
                lines.append("Note over \(cast.id(clone)): \(label)")
            }
        }
        var out = ["%% flowbus trace \(trace.session): \(trace.events.count) events" + (trace.droppedEvents > 0 ? ", the \(trace.droppedEvents) oldest dropped" : ""),
                   "sequenceDiagram"]
        for (name, id) in cast.order {
            let shown = name == clone ? "Clone /s/\(trace.session)/" : name
            out.append("    participant \(id) as \(escape(shown))")
        }
        out += lines.map { "    " + $0 }
        return out.joined(separator: "\n") + "\n"
    }

    static let broker = "\u{0}broker"
    static let clone = "\u{0}clone"

    /// Participants in the order they were declared, each with an id Mermaid cannot misread.
    struct Cast {
        private(set) var order: [(name: String, id: String)] = []
        private var ids: [String: String] = [:]

        mutating func declare(_ name: String) {
            guard ids[name] == nil else { return }
            let id = name == MermaidSequence.clone ? "Clone" : name == MermaidSequence.broker ? "Broker" : "P\(order.count + 1)"
            ids[name] = id
            order.append((name == MermaidSequence.broker ? "broker" : name, id))
        }

        mutating func id(_ name: String) -> String {
            declare(name)
            return ids[name] ?? "Clone"
        }
    }

    /// For each request (by index), the process that served it: the one whose reply answers it,
    /// else any process seen answering that service, else the service's own name.
    static func requestTargets(_ events: [TraceEvent]) -> [Int: String] {
        var servedBy: [String: String] = [:]
        for event in events where event.kind == .reply {
            if let service = event.service, servedBy[service] == nil { servedBy[service] = event.from }
        }
        var targets: [Int: String] = [:]
        var answered = Set<Int>()
        for (index, event) in events.enumerated() where event.isRequest || event.kind == .dropped {
            guard let service = event.service else { continue }
            var target = servedBy[service] ?? service
            if event.isRequest, let answer = events.indices.first(where: { later in
                later > index && !answered.contains(later) && events[later].kind == .reply && events[later].service == service
                    && events[later].to == event.from
                    && (event.idempotencyKey == nil || events[later].idempotencyKey == event.idempotencyKey)
            }) {
                answered.insert(answer)
                target = events[answer].from
            }
            targets[index] = target
        }
        return targets
    }

    /// The arrow's text: shorter than the timeline's, the Clone sequence in front of values.
    static func label(_ event: TraceEvent) -> String {
        let sequence = event.sequence.map { "#\($0) " } ?? ""
        switch event.kind {
        case .intent:
            return "\(event.action ?? "?") (\(event.service ?? "?") on v\(event.version ?? 0))"
        case .call:
            return "\(event.action ?? "?") (\(event.service ?? "?"))" + (event.message.map { ": \($0)" } ?? "")
        case .reply:
            return "\(event.action ?? "?") " + (event.applied == true
                ? "applied" + (event.version.map { " v\($0)" } ?? "")
                : "refused" + (event.error.map { ": \($0)" } ?? ""))
        case .refused:
            return "\(event.action ?? "?") refused by the broker" + (event.error.map { ": \($0)" } ?? "")
        case .dropped:
            return "\(event.action ?? "?") " + (event.message ?? "dropped")
        case .fault:
            return (event.action ?? event.key ?? "?") + " " + (event.message ?? "fault")
        case .navigation:
            return sequence + "nav v\(event.version ?? 0) [\((event.stack ?? []).joined(separator: ", "))]"
                + (event.tab.map { " tab \($0)" } ?? "") + (event.modal.map { " modal \($0)" } ?? "")
        case .state:
            return sequence + "\(event.screen ?? "?") \(event.phase ?? "?") v\(event.version ?? 0)" + (event.message.map { " \"\($0)\"" } ?? "")
        case .record:
            return sequence + "meta flow \(event.flow ?? "-") user \(event.user.flatMap { $0.isEmpty ? nil : $0 } ?? "-")" + (event.open == false ? " closed" : "")
        case .value:
            return sequence + TraceTimeline.what(event) + " " + (event.message ?? "")
        case .deleted:
            return sequence + (event.from.hasPrefix("clone") ? "expired " : "deleted ") + TraceTimeline.what(event)
        }
    }

    /// Text safe inside a participant alias or after a message's colon: Mermaid reads `;` and
    /// line breaks as statement ends, `#…;` as entity codes, `<…>` as HTML, `%%` as a comment.
    public static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.count)
        for character in text {
            switch character {
            case "#": out += "#35;"
            case ";": out += "#59;"
            case "<": out += "#lt;"
            case ">": out += "#gt;"
            case "&": out += "#amp;"
            case "%": out += "#37;"
            case "\"": out += "#quot;"
            case "\n", "\r", "\r\n", "\t": out += " "
            default:
                if character.unicodeScalars.allSatisfy({ $0.properties.generalCategory == .control }) {
                    out += " "
                } else {
                    out.append(character)
                }
            }
        }
        return out
    }
}
