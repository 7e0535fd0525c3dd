import FlowClient
import FlowProtocol
import Foundation
import SwiftProtobuf

/// A Clone value as `flowbus tap` shows it: a session's navigation and view states decoded (the
/// app's payload through the schema its view models publish), anything else by kind or size.
struct TapValue {
    /// One line for a person.
    var text: String
    /// The same, whole, for `--json`.
    var object: [String: Any]

    /// `schema(package)`: the app schema published at `/schema/<package>`, if any.
    static func decode(_ value: [UInt8], schema: (String) -> AppSchema?) -> TapValue {
        if value.isEmpty { return TapValue(text: "", object: [:]) }
        guard let envelope = try? Envelope.decodeChecked(value), !envelope.kind.isEmpty else {
            if let text = String(validating: value, as: UTF8.self), text.unicodeScalars.allSatisfy({ $0.value >= 0x20 || $0 == "\n" }) {
                return TapValue(text: "\"\(text)\"", object: ["text": text])
            }
            return TapValue(text: "<\(value.count) bytes>", object: ["bytes": value.count])
        }
        var object: [String: Any] = ["kind": envelope.kind, "writer": envelope.writer]
        if let navigation = try? envelope.unwrap(Flowbus_V1_Navigation.self) {
            object["navigation"] = json(navigation)
            return TapValue(text: describe(navigation) + " by \(envelope.writer)", object: object)
        }
        if let state = try? envelope.unwrap(Flowbus_V1_ViewState.self) {
            var shown = state
            shown.payload = Data()
            shown.clearPresentation()
            shown.actions = []
            object["state"] = json(shown)
            var payload: [String: Any]?
            if !state.payloadKind.isEmpty, let schema = schema(AppSchema.package(of: state.payloadKind)) {
                payload = PayloadReader(schemas: [schema]).object(kind: state.payloadKind, bytes: state.payload)
            }
            if let payload { object["payload"] = payload }
            return TapValue(text: describe(state, payload: payload) + " by \(envelope.writer)", object: object)
        }
        if let record = try? envelope.unwrap(Flowbus_V1_SessionRecord.self) {
            object["record"] = json(record)
            let user = record.user.isEmpty ? "nobody signed in" : "user \(record.user)"
            let open = record.open ? "open" : "closed" + (record.closedReason.isEmpty ? "" : " (\(record.closedReason))")
            return TapValue(text: "record \(open) · flow \(record.flow.isEmpty ? "-" : record.flow) · \(user) by \(envelope.writer)", object: object)
        }
        if let echo = try? envelope.unwrap(Flowbus_V1_Echo.self) {
            return TapValue(text: "\(envelope.kind) \"\(echo.text)\"", object: object.merging(["text": echo.text]) { $1 })
        }
        object["bytes"] = envelope.payload.count
        return TapValue(text: "\(envelope.kind) (\(envelope.payload.count) bytes) by \(envelope.writer)", object: object)
    }

    /// `nav v7 · tabs shop* cart account · stack shop > item · modal receipt`.
    static func describe(_ navigation: Flowbus_V1_Navigation) -> String {
        var parts = ["nav v\(navigation.version)"]
        let stack = navigation.stacks.first { $0.tab == navigation.selectedTab } ?? navigation.stacks.first
        if navigation.root == .tabs {
            parts.append("tabs " + navigation.stacks.map { $0.tab + ($0.tab == navigation.selectedTab ? "*" : "") }.joined(separator: " "))
        }
        parts.append("stack " + (stack?.screens.map(\.kind).joined(separator: " > ") ?? "-"))
        if navigation.hasModal { parts.append("modal \(navigation.modal.kind)") }
        return parts.joined(separator: " · ")
    }

    /// `state error v3 "Enter a card number." (field card)`, or `state success v2 notice paid
    /// "Thank you!" {"order": …}` with the payload cut to fit a line.
    static func describe(_ state: Flowbus_V1_ViewState, payload: [String: Any]?) -> String {
        let phase = switch state.phase {
        case .none: "none"
        case .loading: "loading"
        case .success: "success"
        case .error: "error"
        case .UNRECOGNIZED(let value): "phase-\(value)"
        }
        var text = "state \(phase) v\(state.screenVersion)"
        if !state.notice.isEmpty { text += " notice \(state.notice)" }
        if !state.message.isEmpty { text += " \"\(state.message)\"" }
        if !state.errorField.isEmpty { text += " (field \(state.errorField))" }
        if let payload, let data = try? JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys, .withoutEscapingSlashes]) {
            let compact = String(decoding: data, as: UTF8.self)
            text += " " + (compact.count > 160 ? String(compact.prefix(159)) + "…" : compact)
        } else if !state.payloadKind.isEmpty {
            text += " \(state.payloadKind) (\(state.payload.count) bytes; no schema published for it)"
        }
        return text
    }

    /// A message in its protobuf JSON form, as Foundation objects.
    static func json(_ message: some SwiftProtobuf.Message) -> Any {
        guard let text = try? message.jsonString(), let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) else { return [:] }
        return object
    }
}
