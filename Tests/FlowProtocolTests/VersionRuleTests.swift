import FlowProtocol
import Foundation
import Testing

@Suite("Version rule")
struct VersionRuleTests {
    @Test func currentVersionIsOne() {
        #expect(WireVersion.current == 1)
        #expect(WireVersion.isSupported(1))
        #expect(!WireVersion.isSupported(0))
        #expect(!WireVersion.isSupported(2))
    }

    @Test func acceptsTheCurrentVersion() throws {
        let envelope = try Envelope.wrapping(Flowbus_V1_Echo.with { $0.text = "hi" }, writer: "test")
        let decoded = try Envelope.decodeChecked(envelope.encoded())
        #expect(decoded == envelope)
        #expect(decoded.version == WireVersion.current)
    }

    @Test func rejectsANewerVersion() throws {
        let bytes = try Vectors.bytes("envelope-version-2")
        #expect(throws: EnvelopeError.unknownVersion(got: 2, supported: 1)) {
            try Envelope.decodeChecked(bytes)
        }
    }

    @Test(arguments: [
        [],                       // empty frame: every field at its default, so version 0
        [0x08, 0x00],             // version explicitly 0
        [0xff, 0xff, 0xff],       // not protobuf
        [0x12, 0x05, 0x61],       // kind claims 5 bytes, has 1
        Array("MDPC01".utf8),     // a header where the body should be
    ] as [[UInt8]])
    func rejectsMalformedBytes(bytes: [UInt8]) {
        #expect {
            try Envelope.decodeChecked(bytes)
        } throws: { error in
            guard case .malformed = error as? EnvelopeError else { return false }
            return true
        }
    }

    @Test func keepsUnknownFieldsOfTheSameVersion() throws {
        // Field 99 (varint 7), as a newer writer of version 1 might add.
        var bytes = try Envelope.wrapping(Flowbus_V1_Echo.with { $0.text = "x" }, sentAtUnixNanos: 5).encoded()
        bytes += [0x98, 0x06, 0x07]
        let envelope = try Envelope.decodeChecked(bytes)
        #expect(try envelope.unwrap(Flowbus_V1_Echo.self).text == "x")
        #expect(try envelope.encoded() == bytes)
    }

    /// The reply a receiver sends for an unknown version is exactly the documented Error vector.
    @Test func unknownVersionReplyMatchesTheVector() throws {
        let failure = EnvelopeError.unknownVersion(got: 2, supported: 1)
        let reply = ErrorReply.envelope(for: failure, writer: "vm-signin")
        #expect(reply.version == WireVersion.current)
        let error = try #require(reply.carriedError)
        let documented = try WireError(serializedBytes: Vectors.bytes("error-unknown-version"))
        #expect(error == documented)
    }

    @Test func everyFailureSaysWhatHappenedAndWhatToDo() {
        let failures: [EnvelopeError] = [
            .malformed(reason: "3 bytes failed to decode"),
            .unknownVersion(got: 9, supported: 1),
            .wrongKind(expected: "flowbus.v1.Intent", got: "flowbus.v1.Echo"),
            .malformedPayload(kind: "flowbus.v1.Intent", reason: "truncated"),
            .unencodable(kind: "flowbus.v1.Intent", reason: "too large"),
        ]
        for failure in failures {
            #expect(!failure.message.isEmpty && !failure.hint.isEmpty)
            #expect(failure.description == failure.message + " " + failure.hint)
        }
        #expect(EnvelopeError.unknownVersion(got: 9, supported: 1).code == .unknownVersion)
        #expect(EnvelopeError.malformed(reason: "").code == .malformed)
    }

    @Test func unwrapChecksTheKind() throws {
        let envelope = try Envelope.wrapping(Flowbus_V1_Echo.with { $0.text = "x" })
        #expect(envelope.kind == "flowbus.v1.Echo")
        #expect(throws: EnvelopeError.wrongKind(expected: "flowbus.v1.Intent", got: "flowbus.v1.Echo")) {
            try envelope.unwrap(Flowbus_V1_Intent.self)
        }
        #expect(envelope.carriedError == nil)
    }

    @Test func errorReplyCarriesCodeMessageAndHint() throws {
        let envelope = ErrorReply.envelope(.unknownService, message: "No worker serves 'vm.nope'.", hint: "Start it.", sentAtUnixNanos: 1)
        let decoded = try Envelope.decodeChecked(envelope.encoded())
        let error = try #require(decoded.carriedError)
        #expect(error.code == .unknownService)
        #expect(error.message == "No worker serves 'vm.nope'.")
        #expect(error.hint == "Start it.")
        let frame = ErrorReply.frame(.fenced, message: "m", hint: "h")
        #expect(try Envelope.decodeChecked(frame).carriedError?.code == .fenced)
    }
}
