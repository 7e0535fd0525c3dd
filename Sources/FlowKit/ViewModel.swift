import FlowProtocol
import Foundation
import SwiftProtobuf

/// A view model's one state, as the source documents have it: every change is published.
public enum ViewModelState: Equatable, Sendable {
    case none
    case loading
    case success(ScreenPayload)
    case error(String)

    public var phase: Flowbus_V1_ViewState.Phase {
        switch self {
        case .none: .none
        case .loading: .loading
        case .success: .success
        case .error: .error
        }
    }
}

/// One intent as a view model sees it: the action, the fields the person typed, and the
/// parameters of the screen it was made on.
public struct IntentInput: Sendable, Equatable {
    public var action: String
    public var fields: [String: String]
    /// The parameters of the screen the intent was made on (Screen.params), e.g. `item`.
    public var params: [String: String]
    public var session: String
    /// The Screen.id the intent was made on; empty when the client did not say.
    public var screenID: String
    /// The kind of the screen the intent was made on (Intent.screen); empty when the client did not say.
    public var screen: String

    public init(
        action: String, fields: [String: String] = [:], params: [String: String] = [:], session: String = "s1", screenID: String = "",
        screen: String = ""
    ) {
        self.screen = screen
        self.action = action
        self.fields = fields
        self.params = params
        self.session = session
        self.screenID = screenID
    }

    /// The field's value with surrounding white space removed; empty when absent.
    public func field(_ name: String) -> String {
        (fields[name] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The field's value exactly as typed (passwords keep their spaces).
    public func rawField(_ name: String) -> String { fields[name] ?? "" }
}

/// Why an intent was refused without touching the state (unknown action, missing parameter):
/// the client gets it in IntentReply.error.
public struct IntentRefusal: Error, Equatable, Sendable, CustomStringConvertible {
    public var code: Flowbus_V1_ErrorCode
    public var message: String
    public var hint: String

    public init(_ code: Flowbus_V1_ErrorCode, _ message: String, hint: String) {
        self.code = code
        self.message = message
        self.hint = hint
    }

    public static func unknownAction(_ action: String, screen: String, known: [String]) -> IntentRefusal {
        IntentRefusal(
            .invalidField, "the \(screen) screen has no action \"\(action)\"",
            hint: "send one of: \(known.joined(separator: ", "))")
    }

    public var description: String { "\(message) (\(hint))" }
}

/// The base of every view model: owns `state`, publishes each change, handles intents.
///
/// One instance serves one session; the worker runtime creates it with the services injected
/// through the subclass's initializer, and calls `handle` on one thread, one intent at a time.
/// Subclasses set `state` (`loading`, then `success` or `error`) and never navigate: the
/// coordinator that watches the screen decides what follows. They declare their `actions` once;
/// the runtime publishes them with every state, with `presentation()`, so any client can draw
/// the screen and act on it.
open class ViewModel {
    /// The screen kind this view model serves, e.g. `checkout` (its service is `vm.<screen>`).
    open class var screen: String { fatalError("\(Self.self) must override `screen`") }
    /// The actions `handle` accepts, published with every state (`appear` and `reset` are the
    /// runtime's own and are not listed).
    open class var actions: [ActionSpec] { [] }

    public let session: String
    /// Receives every state change with the payload to show (the `didSet` of the documents).
    public var onChange: ((ViewModelState, ScreenPayload?) -> Void)?

    /// The payload last shown in `success`; kept while an error is on screen.
    public private(set) var data: ScreenPayload?

    /// The parameters of the screen the last intent was made on (Screen.params), e.g. `item`;
    /// the runtime sets them before each intent.
    public var screenParams: [String: String] = [:]

    /// Whether a state of this session is on the bus already (published, or restored from it).
    public internal(set) var hasPublished = false

    /// The form field the error on screen is about (`ViewState.error_field`), so a client can
    /// put the focus there; empty when none. Set with `fail(_:field:)`.
    public private(set) var errorField = ""
    private var nextErrorField = ""

    public var state: ViewModelState = .none {
        didSet {
            if case .success(let shown) = state { data = shown }
            errorField = state.phase == .error ? nextErrorField : ""
            nextErrorField = ""
            if let onChange {
                hasPublished = true
                onChange(state, data)
            }
        }
    }

    public init(session: String) {
        self.session = session
    }

    /// Shows the error `message` about the form field `field` (a field name of the presentation):
    /// a client puts the focus there once the person has read it.
    public func fail(_ message: String, field: String) {
        nextErrorField = field
        state = .error(message)
    }

    /// Shows the error `message` with `payload` instead of the last payload shown, for an error
    /// the coordinator must tell apart (e.g. a notice "unverified" with the account's e-mail).
    public func showError(_ message: String, payload: ScreenPayload) {
        self.data = payload
        state = .error(message)
    }

    /// Handles one intent. Throw `IntentRefusal` for what is not an intent of this screen at all;
    /// every rule of the screen ends in `state = .error(message)` instead. The default answers
    /// `appear` by publishing the current state once (so clients get the presentation and
    /// actions); a state already on the bus is not published again, which would only make a
    /// client's action in flight stale.
    open func handle(_ intent: IntentInput) throws(IntentRefusal) {
        if intent.action == "appear" {
            if !hasPublished { republish() }
            return
        }
        throw .unknownAction(intent.action, screen: Self.screen, known: Self.actions.map(\.name))
    }

    /// Publishes the current state again (with the presentation and actions of now).
    public func republish() {
        guard let onChange else { return }
        hasPublished = true
        onChange(state, data)
    }

    /// Why `action` cannot be taken now (a person reads it), or nil when it can.
    open func disabledReason(for action: String) -> String? { nil }

    /// How the screen may be drawn in the current state: a small generic presentation any
    /// client can render (Protocols/README.md §12).
    open func presentation() -> Presentation { Presentation() }

    /// Puts back what the bus remembers of this session after a restart or on another
    /// replica, without publishing. Subclasses that keep more than `data` read it from there.
    open func restore(state: ViewModelState, data: ScreenPayload?) {
        let saved = onChange
        onChange = nil
        self.data = data
        self.state = state
        if case .error = state { self.data = data }
        onChange = saved
    }

    /// The declared actions as published now (`vm.<screen>`, enabled or not).
    public func offeredActions() -> [Flowbus_V1_Action] {
        let service = "vm.\(Self.screen)"
        return Self.actions.map { action in
            action.wire(service: service, handler: .viewModel, disabledReason: disabledReason(for: action.name))
        }
    }

    /// The payload last shown as `type` (the app's own message), nil when none or another kind.
    public func shown<M: SwiftProtobuf.Message>(_ type: M.Type) -> M? { data?.decode(type) }
}
