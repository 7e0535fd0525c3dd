import FlowProtocol
import Foundation
import SwiftProtobuf
import Testing

@Suite("Protobuf golden vectors")
struct ProtobufVectorTests {
    static let names = Vectors.names(withExtension: "txtpb")

    @Test func everyKindOfPayloadHasAVector() {
        let types = Set(Self.names.compactMap { try? Vectors.header("type", in: Vectors.text($0, "txtpb")) })
        for required in ["Envelope", "Intent", "IntentReply", "ViewState", "Screen", "Navigation", "Error", "Echo",
                         "CoordinatorCall", "CoordinatorReply", "ServiceCall", "ServiceReply"] {
            #expect(types.contains("flowbus.v1.\(required)"), "no vector of flowbus.v1.\(required)")
        }
    }

    /// The .pb bytes decode to the values the .txtpb documents and re-encode to the same bytes.
    @Test(arguments: names)
    func decodesToTheDocumentedValuesAndReencodesIdentically(name: String) throws {
        let text = try Vectors.text(name, "txtpb")
        let typeName = try #require(Vectors.header("type", in: text), "\(name).txtpb has no '# type:' line")
        let type = try #require(PayloadKinds.type(named: typeName), "unknown type \(typeName)")
        let bytes = try Vectors.bytes(name)

        let decoded = try type.init(serializedBytes: bytes)
        let documented = try type.init(textFormatString: text)
        #expect(decoded.isEqualTo(message: documented), "\(name).pb decodes to \(decoded), the .txtpb says \(documented)")
        #expect(try Vectors.deterministic(decoded) == bytes)
    }

    /// Envelope vectors name their payload: it is byte for byte that vector, under the right kind.
    @Test(arguments: names.filter { $0.hasPrefix("envelope-") })
    func envelopePayloadIsTheNamedVector(name: String) throws {
        let text = try Vectors.text(name, "txtpb")
        let payloadLine = try #require(Vectors.header("payload", in: text))
        let payloadName = String(payloadLine.prefix { $0 != " " })
        let envelope = try Envelope(serializedBytes: Vectors.bytes(name))
        #expect(Array(envelope.payload) == (try Vectors.bytes(payloadName)))
        let payloadType = try Vectors.header("type", in: Vectors.text(payloadName, "txtpb"))
        #expect(envelope.kind == payloadType)
    }

    @Test func echoRequestEnvelopeFields() throws {
        let envelope = try Envelope.decodeChecked(Vectors.bytes("envelope-echo-request"))
        #expect(envelope.version == 1)
        #expect(envelope.kind == "flowbus.v1.Echo")
        #expect(try envelope.unwrap(Flowbus_V1_Echo.self).text == "hello")
        #expect(envelope.idempotencyKey == "cli-1-0001")
        #expect(envelope.writer == "cli")
        #expect(envelope.session.isEmpty)
        #expect(envelope.sentAtUnixNanos == 1_767_225_600_000_000_000)
    }

    @Test func viewStateEnvelopeFields() throws {
        let envelope = try Envelope.decodeChecked(Vectors.bytes("envelope-viewstate"))
        #expect(envelope.session == "abc")
        #expect(envelope.incarnation == 3)
        #expect(envelope.keyVersion == 4)
        #expect(envelope.writer == "vm-signin")
        let state = try envelope.unwrap(Flowbus_V1_ViewState.self)
        #expect(state.phase == .error)
        #expect(state.message == "Invalid e-mail or password.")
        #expect(state.screenVersion == 4)
    }

    @Test func intentFields() throws {
        let intent = try Flowbus_V1_Intent(serializedBytes: Vectors.bytes("intent-signin"))
        #expect(intent.screen == "signin")
        #expect(intent.action == "logIn")
        #expect(intent.fields == ["email": "ana@example.com", "password": "correct horse"])
        #expect(intent.screenVersion == 3)
    }

    @Test func navigationFields() throws {
        let tabs = try Flowbus_V1_Navigation(serializedBytes: Vectors.bytes("navigation-tabs"))
        #expect(tabs.root == .tabs)
        #expect(tabs.stacks.map(\.tab) == ["home", "likes", "settings", "expenses"])
        #expect(tabs.stacks[0].screens.map(\.kind) == ["home", "details"])
        #expect(tabs.stacks[0].screens[1].params == ["item": "movie:42"])
        #expect(tabs.selectedTab == "expenses")
        #expect(tabs.hasModal && tabs.modal.kind == "confirmation")
        #expect(tabs.version == 17)

        let stack = try Flowbus_V1_Navigation(serializedBytes: Vectors.bytes("navigation-stack"))
        #expect(stack.root == .stack)
        #expect(stack.stacks.count == 1 && stack.stacks[0].tab.isEmpty)
        #expect(stack.stacks[0].screens.map(\.id) == ["signin-1", "signup-1"])
        #expect(!stack.hasModal)
    }

    @Test func errorAndIntentReplyFields() throws {
        let reply = try Flowbus_V1_IntentReply(serializedBytes: Vectors.bytes("intent-reply-stale"))
        #expect(!reply.applied)
        #expect(reply.error.code == .staleIntent)
        #expect(reply.screenVersion == 5)

        let tooLarge = try Envelope.decodeChecked(Vectors.bytes("envelope-error-too-large"))
        let error = try #require(tooLarge.carriedError)
        #expect(error.code == .messageTooLarge)
        #expect(error.hint.contains("--max-message-bytes"))
    }

    @Test func errorCodesKeepTheirWireNumbers() {
        let expected: [(ErrorCode, Int)] = [
            (.unspecified, 0), (.unknownVersion, 1), (.malformed, 2), (.unknownService, 3), (.messageTooLarge, 4),
            (.staleIntent, 5), (.invalidField, 6), (.fenced, 7), (.unavailable, 8), (.internal, 9),
        ]
        for (code, number) in expected {
            #expect(code.rawValue == number, "\(code)")
        }
    }
}
