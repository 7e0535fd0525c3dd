import Clone
import FlowProtocol

/// Turns Clone changes under `/s/<session>/` into trace events. Runs on the history's decode queue.
enum TraceDecoding {
    static func decode(_ update: CloneSessionUpdate, into events: inout [TraceEvent], undecodable: inout Int) {
        let key = String(decoding: update.key, as: UTF8.self)
        // /s/<session>/<rest>: the server only reports keys that have this shape.
        let segments = key.split(separator: "/", maxSplits: 2, omittingEmptySubsequences: true)
        guard segments.count == 3, segments[0] == "s" else { return }
        let session = String(segments[1])
        let rest = String(segments[2])
        var event = TraceEvent(kind: .value, session: session, atUnixNanos: update.atUnixNanos, from: "")
        event.sequence = update.sequence
        event.key = key
        guard !update.value.isEmpty else {
            event.kind = .deleted
            event.from = update.expired ? "clone (ttl)" : ""
            if rest.hasPrefix("vm/") { event.screen = String(rest.dropFirst(3)) }
            events.append(event)
            return
        }
        guard let envelope = try? Envelope.decodeChecked(update.value) else {
            undecodable += 1
            event.message = "a value that is no Envelope (\(update.value.count) bytes)"
            events.append(event)
            return
        }
        event.from = envelope.writer
        if envelope.incarnation > 0 { event.incarnation = envelope.incarnation }
        if rest == "nav", let navigation = try? envelope.unwrap(Flowbus_V1_Navigation.self) {
            event.kind = .navigation
            describe(navigation, into: &event)
        } else if rest.hasPrefix("vm/"), envelope.holds(Flowbus_V1_ViewState.self), let state = Flowbus_V1_ViewState.head(of: envelope.payload) {
            // Only the head: decoding each state whole, presentation and all, was most of its cost here.
            event.kind = .state
            event.screen = String(rest.dropFirst(3))
            event.phase = phaseName(state.phase)
            event.version = state.screenVersion
            if !state.message.isEmpty { event.message = state.message }
            if !envelope.idempotencyKey.isEmpty { event.idempotencyKey = envelope.idempotencyKey }
        } else if rest == "meta", let record = try? envelope.unwrap(Flowbus_V1_SessionRecord.self) {
            event.kind = .record
            event.user = record.user
            event.flow = record.flow
            event.open = record.open
        } else {
            event.message = envelope.kind
            if envelope.keyVersion > 0 { event.version = envelope.keyVersion }
        }
        events.append(event)
    }

    static func describe(_ navigation: Flowbus_V1_Navigation, into event: inout TraceEvent) {
        event.version = navigation.version
        let stack = navigation.stacks.first { $0.tab == navigation.selectedTab } ?? navigation.stacks.first
        event.stack = stack?.screens.map(\.kind) ?? []
        if navigation.root == .tabs, !navigation.selectedTab.isEmpty { event.tab = navigation.selectedTab }
        if navigation.hasModal { event.modal = navigation.modal.kind }
        event.top = navigation.hasModal ? navigation.modal.kind : (stack?.screens.last?.kind ?? "")
    }

    static func phaseName(_ phase: Flowbus_V1_ViewState.Phase) -> String {
        switch phase {
        case .none: "none"
        case .loading: "loading"
        case .success: "success"
        case .error: "error"
        case .UNRECOGNIZED(let value): "phase-\(value)"
        }
    }

    /// The wire name of an error code, as Protocols/README.md writes it.
    static func codeName(_ code: ErrorCode) -> String {
        switch code {
        case .unspecified: "UNSPECIFIED"
        case .unknownVersion: "UNKNOWN_VERSION"
        case .malformed: "MALFORMED"
        case .unknownService: "UNKNOWN_SERVICE"
        case .messageTooLarge: "MESSAGE_TOO_LARGE"
        case .staleIntent: "STALE_INTENT"
        case .invalidField: "INVALID_FIELD"
        case .fenced: "FENCED"
        case .unavailable: "UNAVAILABLE"
        case .internal: "INTERNAL"
        case .forbidden: "FORBIDDEN"
        case .damaged: "DAMAGED"
        case .UNRECOGNIZED(let value): "CODE_\(value)"
        }
    }

    static func describe(_ error: WireError) -> String {
        "\(codeName(error.code)): \(error.message)"
    }

    /// A coordinator call's navigation ops in a few words: `push details; dismiss`.
    static func describe(_ ops: [Flowbus_V1_NavigationOp]) -> String {
        ops.map { op in
            let screens = op.screens.map(\.kind).joined(separator: ",")
            switch op.kind {
            case .unspecified: return "unspecified"
            case .setRootStack: return "setRoot [\(screens)]"
            case .setRootTabs: return "setTabs [\(op.tabs.map(\.tab).joined(separator: ","))]" + (op.target.isEmpty ? "" : " on \(op.target)")
            case .push: return "push \(screens)" + (op.tab.isEmpty ? "" : " on \(op.tab)")
            case .pop: return "pop" + (op.tab.isEmpty ? "" : " on \(op.tab)")
            case .popTo: return "popTo \(op.target)"
            case .popToRoot: return "popToRoot" + (op.tab.isEmpty ? "" : " on \(op.tab)")
            case .present: return "present \(screens)"
            case .dismiss: return "dismiss"
            case .selectTab: return "selectTab \(op.target.isEmpty ? op.tab : op.target)"
            case .UNRECOGNIZED(let value): return "op-\(value)"
            }
        }.joined(separator: "; ")
    }
}
