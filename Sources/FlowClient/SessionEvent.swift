import FlowProtocol
import Foundation

/// Words of the log that programs read.
public enum SessionEventText {
    /// Starts the error of a `reply` the client never got (it gave up after its tries): the
    /// outcome is unknown, and sending the same intent again is safe.
    public static let unanswered = "unanswered: "
}

/// One entry of a session's ordered log: what the client saw on the bus and what it sent,
/// in the order it happened (for `flowbus trace`, test diffs and the terminal client's pane).
public struct SessionEvent: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// A new navigation value: its version, the top screen's kind, the shown stack, the tab, the modal.
        case navigation(version: UInt64, top: String, stack: [String], tab: String, modal: String)
        /// A view-model state of `screen`.
        case state(screen: String, phase: ScreenPhase, screenVersion: UInt64, message: String, notice: String)
        case record(user: String, flow: String, open: Bool)
        case coordinator(name: String, live: Bool)
        /// A key deleted (session closed, state reset).
        case deleted(key: String)
        /// A value ignored because the same writer already wrote the key with a newer incarnation.
        case fenced(key: String, newest: UInt64)
        /// An intent this client sent, and its outcome (nil until the reply came).
        case intent(action: String, service: String, version: UInt64, idempotencyKey: String)
        case reply(action: String, service: String, applied: Bool, error: String, idempotencyKey: String)
    }

    /// The position in this client's log, from 1.
    public var index: Int
    public var kind: Kind
    /// The Clone sequence for bus values; 0 for what this client sent.
    public var sequence: UInt64
    public var key: String
    /// The process (plugin name) that wrote the value, or this client for intents.
    public var writer: String
    public var incarnation: UInt64
    /// The writer's clock at sending (Envelope.sent_at_unix_nanos), 0 if unknown.
    public var sentAtUnixNanos: Int64
    /// When this client received or sent it.
    public var at: Date

    /// One human line: `#12 seq 340 nav v4 checkout [cart, checkout] by coord-app/3`.
    public var line: String {
        let origin = writer.isEmpty ? "" : " by \(writer)" + (incarnation > 0 ? "/\(incarnation)" : "")
        let prefix = "#\(index)" + (sequence > 0 ? " seq \(sequence)" : "")
        switch kind {
        case .navigation(let version, let top, let stack, let tab, let modal):
            return "\(prefix) nav v\(version) top \(top.isEmpty ? "-" : top)"
                + (tab.isEmpty ? "" : " tab \(tab)") + " stack [\(stack.joined(separator: ", "))]"
                + (modal.isEmpty ? "" : " modal \(modal)") + origin
        case .state(let screen, let phase, let version, let message, let notice):
            return "\(prefix) \(screen) \(phase.rawValue) v\(version)" + (message.isEmpty ? "" : " \"\(message)\"")
                + (notice.isEmpty ? "" : " notice \(notice)") + origin
        case .record(let user, let flow, let open):
            return "\(prefix) meta flow \(flow) user \(user.isEmpty ? "-" : user)\(open ? "" : " closed")" + origin
        case .coordinator(let name, let live):
            return "\(prefix) coordinator \(name) \(live ? "live" : "released")" + origin
        case .deleted(let key):
            return "\(prefix) deleted \(key)"
        case .fenced(let key, let newest):
            return "\(prefix) fenced \(key) (incarnation \(incarnation) < \(newest))" + origin
        case .intent(let action, let service, let version, let idempotencyKey):
            return "\(prefix) → \(service) \(action) on v\(version) key \(idempotencyKey)"
        case .reply(let action, let service, _, let error, _) where error.hasPrefix(SessionEventText.unanswered):
            return "\(prefix) ← \(service) \(action) no answer: \(error.dropFirst(SessionEventText.unanswered.count))"
        case .reply(let action, let service, let applied, let error, _):
            return "\(prefix) ← \(service) \(action) " + (applied ? "applied" : "refused: \(error)")
        }
    }
}
