import FlowKit
import FlowProtocol
import Foundation
import Testing

@Suite("ScreenPayload")
struct ScreenPayloadTests {
    static func echo(_ text: String) -> Flowbus_V1_Echo {
        var echo = Flowbus_V1_Echo()
        echo.text = text
        return echo
    }

    /// A payload made from a message hands that message back, and equals one made from its bytes.
    @Test func madeFromAMessage() throws {
        let payload = ScreenPayload(Self.echo("hello"), notice: Notice("sent", "Sent."))
        #expect(payload.decode(Flowbus_V1_Echo.self) == Self.echo("hello"))
        #expect(payload.decode(Flowbus_V1_Intent.self) == nil)
        let fromBytes = ScreenPayload(kind: payload.kind, bytes: payload.bytes, notice: Notice("sent", "Sent."))
        #expect(fromBytes == payload)
        #expect(fromBytes.decode(Flowbus_V1_Echo.self) == Self.echo("hello"))
    }

    /// Changing the bytes (or the kind) forgets the message they were made from.
    @Test func changedBytesAreDecodedAgain() throws {
        var payload = ScreenPayload(Self.echo("old"))
        payload.bytes = try Self.echo("new").serializedData()
        #expect(payload.decode(Flowbus_V1_Echo.self) == Self.echo("new"))
        payload.kind = "flowbus.v1.Intent"
        #expect(payload.decode(Flowbus_V1_Echo.self) == nil)
        payload.kind = Flowbus_V1_Echo.protoMessageName
        #expect(payload.decode(Flowbus_V1_Echo.self) == Self.echo("new"))
    }
}
