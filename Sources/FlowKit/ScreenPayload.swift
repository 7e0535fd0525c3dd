import FlowProtocol
import Foundation
import SwiftProtobuf

/// What a view model shows in `success`: its app's own payload (any protobuf message, carried as
/// its full name and bytes, so the core never needs the app's types) and an optional notice.
///
/// Held by reference (one word; none for an empty payload): a view model keeps two, its state's
/// and the data last shown, for every session it serves, and a payload held inline took some
/// 120 bytes each even while the screen showed nothing (issue 16: memory per session).
public struct ScreenPayload: Equatable, Sendable {
    /// The contents, never changed once made: a change makes new ones.
    private final class Contents: Sendable {
        let kind: String
        let bytes: Data
        let notice: Notice?
        /// The message `bytes` were made from, when this payload was made from one: `decode`
        /// hands it back instead of decoding the bytes again (a view model draws its presentation
        /// from the payload with every state it publishes).
        let source: (any SwiftProtobuf.Message)?

        init(kind: String, bytes: Data, notice: Notice?, source: (any SwiftProtobuf.Message)?) {
            self.kind = kind
            self.bytes = bytes
            self.notice = notice
            self.source = source
        }
    }

    /// Nil for the empty payload (no kind, no bytes, no notice).
    private var contents: Contents?

    /// The payload message's full protobuf name, e.g. `shop.v1.Cart`; empty for none.
    public var kind: String {
        get { contents?.kind ?? "" }
        set { replace(kind: newValue, bytes: bytes, notice: notice, source: nil) }
    }
    public var bytes: Data {
        get { contents?.bytes ?? Data() }
        set { replace(kind: kind, bytes: newValue, notice: notice, source: nil) }
    }
    /// A short code coordinators and scripts branch on, with its text for people.
    public var notice: Notice? {
        get { contents?.notice }
        set { replace(kind: kind, bytes: bytes, notice: newValue, source: contents?.source) }
    }

    public init(kind: String = "", bytes: Data = Data(), notice: Notice? = nil) {
        replace(kind: kind, bytes: bytes, notice: notice, source: nil)
    }

    /// `message` serialized, with an optional notice.
    public init(_ message: some SwiftProtobuf.Message, notice: Notice? = nil) {
        replace(kind: type(of: message).protoMessageName, bytes: (try? message.wireData()) ?? Data(), notice: notice, source: message)
    }

    /// Changing `kind` or `bytes` forgets the message they were made from.
    private mutating func replace(kind: String, bytes: Data, notice: Notice?, source: (any SwiftProtobuf.Message)?) {
        contents = kind.isEmpty && bytes.isEmpty && notice == nil
            ? nil : Contents(kind: kind, bytes: bytes, notice: notice, source: source)
    }

    /// Equal when the kind, the bytes and the notice are: how the payload was made does not count.
    public static func == (left: ScreenPayload, right: ScreenPayload) -> Bool {
        if left.contents === right.contents { return true }
        return left.kind == right.kind && left.bytes == right.bytes && left.notice == right.notice
    }

    /// A payload that is only a notice.
    public init(notice: Notice) {
        self.init(kind: "", bytes: Data(), notice: notice)
    }

    public static let empty = ScreenPayload()

    /// The payload as `type`, nil when it holds another kind or does not decode.
    public func decode<M: SwiftProtobuf.Message>(_ type: M.Type) -> M? {
        guard let contents, contents.kind == M.protoMessageName else { return nil }
        if let message = contents.source as? M { return message }
        return try? M(serializedBytes: contents.bytes)
    }
}

/// A short message that is not an error: a code programs branch on ("signedIn", "resetSent")
/// and its text for a person.
public struct Notice: Equatable, Sendable {
    public var code: String
    public var text: String

    public init(_ code: String, _ text: String = "") {
        self.code = code
        self.text = text
    }
}

/// An action a view model or a coordinator offers, declared once in the plugin: the runtimes
/// publish it with the screen (Protocols/README.md §12), and clients route by it.
public struct ActionSpec: Equatable, Sendable, ExpressibleByStringLiteral {
    public var name: String
    /// What a button for it says; the name when empty.
    public var label: String
    /// The form fields the action reads.
    public var fields: [String]
    /// The client empties the fields it sent once the action ends in success.
    public var clearsFields: Bool

    public init(_ name: String, label: String = "", fields: [String] = [], clearsFields: Bool = false) {
        self.name = name
        self.label = label
        self.fields = fields
        self.clearsFields = clearsFields
    }

    public init(stringLiteral name: String) {
        self.init(name)
    }

    /// The wire form, handled by `service` (`vm.<kind>` or `coord.<name>`).
    public func wire(service: String, handler: Flowbus_V1_Action.Handler, disabledReason: String? = nil) -> Flowbus_V1_Action {
        var action = Flowbus_V1_Action()
        action.name = name
        action.label = label.isEmpty ? name : label
        action.fields = fields
        action.service = service
        action.handler = handler
        action.clearsFields = clearsFields
        if let disabledReason {
            action.disabled = true
            action.disabledReason = disabledReason
        }
        return action
    }
}

/// A view model's state as a coordinator watching it receives it.
public struct ScreenChange: Equatable, Sendable {
    public var screen: String
    public var state: ViewModelState
    /// The payload last shown (kept while an error is on screen), nil when none.
    public var payload: ScreenPayload?
    public var screenID: String

    public init(screen: String, state: ViewModelState, payload: ScreenPayload?, screenID: String = "") {
        self.screen = screen
        self.state = state
        self.payload = payload
        self.screenID = screenID
    }

    /// The notice code of the change ("" when none).
    public var notice: String { payload?.notice?.code ?? "" }
    public var noticeText: String { payload?.notice?.text ?? "" }

    /// The payload as `type` (the app's own message), nil when it holds another kind.
    public func decode<M: SwiftProtobuf.Message>(_ type: M.Type) -> M? { payload?.decode(type) }
}
