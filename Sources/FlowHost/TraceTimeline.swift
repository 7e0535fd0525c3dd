/// A session's history as text: one line per event, the time from the first event, the Clone
/// sequence, who did it and what.
///
/// ```
///   +0.000s          test/3f2a → vm.checkout   intent pay on v0  key test/3f2a/1
///   +0.003s  seq 57  vm-checkout → checkout    state loading v1
///   +0.181s          vm-checkout ⇠ vm.checkout reply pay applied v1  (vm-checkout/4242/0 → test/3f2a)
/// ```
public enum TraceTimeline {
    public static func lines(_ trace: SessionTrace) -> [String] {
        var lines = ["session \(trace.session): \(trace.events.count) events" + (trace.closed ? ", closed" : "")]
        if trace.droppedEvents > 0 {
            lines.append("(the \(trace.droppedEvents) oldest events were dropped: the host keeps the last \(trace.limits.eventsPerSession) of a session)")
        }
        if trace.lostObservations > 0 {
            lines.append("(the host could not record \(trace.lostObservations) bus messages since it started: its history decoder fell behind or a body was no Envelope; events may be missing)")
        }
        guard let first = trace.events.first?.atUnixNanos else { return lines }
        let whoWidth = min(24, trace.events.map { who($0).count }.max() ?? 0)
        let whatWidth = min(28, trace.events.map { what($0).count }.max() ?? 0)
        for event in trace.events {
            let sequence = event.sequence.map { "seq \($0)" } ?? ""
            lines.append(
                pad(offset(event.atUnixNanos - first), 10, right: true) + "  " + pad(sequence, 9) + " "
                    + pad(who(event), whoWidth, right: true) + " " + arrow(event) + " " + pad(what(event), whatWidth) + "  "
                    + detail(event))
        }
        return lines
    }

    public static func text(_ trace: SessionTrace) -> String {
        lines(trace).joined(separator: "\n")
    }

    /// `+1.234s`: seconds with milliseconds.
    static func offset(_ nanoseconds: Int64) -> String {
        let milliseconds = max(0, nanoseconds) / 1_000_000
        let fraction = String(milliseconds % 1000)
        return "+\(milliseconds / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction + "s"
    }

    static func who(_ event: TraceEvent) -> String {
        event.from.isEmpty ? "clone" : event.from
    }

    static func arrow(_ event: TraceEvent) -> String {
        switch event.kind {
        case .intent, .call: "→"
        case .reply, .refused: "⇠"
        case .dropped: "✗"
        case .fault: "⚡"
        case .navigation, .state, .record, .value, .deleted: "⇒"
        }
    }

    /// The service of MDP traffic; for Clone values the key below `/s/<session>/`.
    static func what(_ event: TraceEvent) -> String {
        if let service = event.service { return service }
        guard let key = event.key else { return "" }
        let parts = key.split(separator: "/", maxSplits: 2)
        return parts.count == 3 ? String(parts[2]) : key
    }

    public static func detail(_ event: TraceEvent) -> String {
        var text: String
        switch event.kind {
        case .intent:
            text = "intent \(event.action ?? "?") on v\(event.version ?? 0)"
            if let screen = event.screen, "vm.\(screen)" != event.service { text += " (screen \(screen))" }
        case .call:
            text = "call \(event.action ?? "?")" + (event.version.map { " on nav v\($0)" } ?? "")
            if let ops = event.message { text += ": \(ops)" }
        case .reply, .refused:
            text = (event.kind == .refused ? "refused by the broker: " : "reply ") + (event.action ?? "?")
            if event.applied == true {
                text += " applied" + (event.version.map { " v\($0)" } ?? "")
            } else {
                text += " refused" + (event.error.map { ", \($0)" } ?? "")
            }
            let origin = [event.worker, event.to].compactMap { $0 }.joined(separator: " → ")
            if !origin.isEmpty { text += "  (\(origin))" }
        case .dropped:
            text = "\(event.action ?? "?") on v\(event.version ?? 0) " + (event.message ?? "dropped")
        case .fault:
            text = (event.action.map { "\($0) on v\(event.version ?? 0) " } ?? "") + (event.message ?? "fault")
        case .navigation:
            text = "nav v\(event.version ?? 0) top \(nonEmpty(event.top))"
                + (event.tab.map { " tab \($0)" } ?? "") + " [\((event.stack ?? []).joined(separator: ", "))]"
                + (event.modal.map { " modal \($0)" } ?? "")
        case .state:
            text = "state \(event.phase ?? "?") v\(event.version ?? 0)" + (event.message.map { " \"\($0)\"" } ?? "")
        case .record:
            text = "record flow \(nonEmpty(event.flow)) user \(nonEmpty(event.user))" + (event.open == false ? " closed" : "")
        case .value:
            text = "value \(event.message ?? "")" + (event.version.map { " v\($0)" } ?? "")
        case .deleted:
            text = event.from.hasPrefix("clone") ? "expired (ttl)" : "deleted"
        }
        if event.isRequest, let key = event.idempotencyKey { text += "  key \(key)" }
        // Incarnation 1 is every process's first life; a higher one means it was restarted.
        if let incarnation = event.incarnation, incarnation > 1, !event.isAnswer { text += "  incarnation \(incarnation)" }
        return text
    }

    private static func nonEmpty(_ text: String?) -> String {
        guard let text, !text.isEmpty else { return "-" }
        return text
    }

    private static func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
        let count = text.count
        guard count < width else { return text }
        let space = String(repeating: " ", count: width - count)
        return right ? space + text : text + space
    }
}
