import FlowProtocol
import Foundation
import Testing
import WireCheck

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
        // With their check, as their writer sent them: nothing was damaged, they are just wrong.
        #expect {
            try Envelope.decodeChecked(WireCheck.sealed(bytes))
        } throws: { error in
            guard case .malformed = error as? EnvelopeError else { return false }
            return true
        }
    }

    @Test func keepsUnknownFieldsOfTheSameVersion() throws {
        // Field 99 (varint 7), as a newer writer of version 1 might add, before the check.
        var bytes = try Envelope.wrapping(Flowbus_V1_Echo.with { $0.text = "x" }, sentAtUnixNanos: 5).serializedBytes() as [UInt8]
        bytes += [0x98, 0x06, 0x07]
        WireCheck.seal(&bytes)
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
            .damaged(reason: "it does not end with its check"),
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
        #expect(EnvelopeError.damaged(reason: "").code == .damaged)
    }

    /// Bytes cut short, or with any one byte changed, are told from the message sent: never
    /// decoded into something else, never taken for malformed (their writer did nothing wrong).
    @Test func everyTruncationAndEveryChangedByteIsDamage() throws {
        let bytes = try Vectors.bytes("envelope-intent")
        #expect(try Envelope.decodeChecked(bytes).kind == "flowbus.v1.Intent")
        func isDamage(_ damaged: [UInt8]) -> Bool {
            do {
                _ = try Envelope.decodeChecked(damaged)
                return false
            } catch {
                guard case .damaged = error else { return false }
                return true
            }
        }
        for length in 0..<bytes.count {
            #expect(isDamage(Array(bytes.prefix(length))), "cut to \(length) of \(bytes.count) bytes")
        }
        for index in bytes.indices {
            for flip: UInt8 in [0x01, 0x80, 0xFF] {
                var changed = bytes
                changed[index] ^= flip
                #expect(isDamage(changed), "byte \(index) xor \(flip)")
            }
        }
    }

    /// Without its check an envelope is damage, whatever it holds; the check a decoded envelope
    /// carried is not sent on: encoding it again seals it anew.
    @Test func theCheckIsWrittenLastAndSealedAnew() throws {
        let envelope = try Envelope.wrapping(Flowbus_V1_Echo.with { $0.text = "x" }, writer: "w")
        let unchecked: [UInt8] = try envelope.serializedBytes()
        let sealed = try envelope.encoded()
        #expect(sealed == WireCheck.sealed(unchecked))
        #expect(sealed.suffix(5).first == WireCheck.tag)
        #expect(throws: EnvelopeError.self) { try Envelope.decodeChecked(unchecked) }
        var decoded = try Envelope.decodeChecked(sealed)
        #expect(decoded.check == 0)
        decoded.check = 12345
        #expect(try decoded.encoded() == sealed)
        // A decoder that knows nothing of the check reads it as field 11.
        #expect(try Envelope(serializedBytes: sealed).check == CRC32C.checksum(unchecked))
    }

    /// The damaged-request answer is one fixed message, so clients compare bytes, not decode.
    @Test func theDamagedAnswerIsOneFixedMessage() throws {
        let reply = try Envelope.decodeChecked(ErrorReply.damagedFrame)
        let error = try #require(reply.carriedError)
        #expect(error.code == .damaged)
        #expect(!error.message.isEmpty && !error.hint.isEmpty)
        #expect(reply.writer.isEmpty && reply.sentAtUnixNanos == 0)
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
