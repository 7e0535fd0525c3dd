@testable import FlowKit
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
    /// A copy changed is a payload of its own; the original keeps its contents (and the message
    /// they were made from). The notice can change without the bytes being decoded again.
    @Test func aChangedCopyLeavesTheOriginalAlone() throws {
        let original = ScreenPayload(Self.echo("kept"), notice: Notice("a", "A."))
        var copy = original
        copy.notice = Notice("b", "B.")
        #expect(copy.decode(Flowbus_V1_Echo.self) == Self.echo("kept"))
        #expect(original.notice == Notice("a", "A.") && copy.notice == Notice("b", "B."))
        #expect(copy != original)
        copy.bytes = try Self.echo("changed").serializedData()
        #expect(original.decode(Flowbus_V1_Echo.self) == Self.echo("kept"))
        #expect(copy.decode(Flowbus_V1_Echo.self) == Self.echo("changed"))
        copy.notice = Notice("a", "A.")
        copy.bytes = original.bytes
        #expect(copy == original)
    }

    /// Issue 16: a payload is one word, so a view model's state and shown data (one each per
    /// session it serves) hold none of its contents inline; the empty payload holds nothing.
    @Test func aPayloadIsHeldByReference() {
        #expect(MemoryLayout<ScreenPayload>.size == MemoryLayout<Int>.size)
        #expect(MemoryLayout<ViewModelState>.size <= 17)
        #expect(ScreenPayload() == .empty && ScreenPayload(kind: "", bytes: Data(), notice: nil) == .empty)
        #expect(ScreenPayload(notice: Notice("x")) != .empty)
    }

    /// A view model's applied keys: the newest `limit`, each with its reply's version; one
    /// applied again moves to the end with its new version; one forgotten is gone.
    @Test func appliedKeysKeepTheNewest() {
        var keys = AppliedKeys()
        for index in 0..<5 { keys.record("k\(index)", version: UInt64(index), keeping: 3) }
        #expect(keys.count == 3 && keys["k0"] == nil && keys["k1"] == nil && keys["k2"] == 2 && keys["k4"] == 4)
        keys.record("k2", version: 9, keeping: 3)
        #expect(keys["k2"] == 9 && keys.count == 3)
        keys.record("k5", version: 5, keeping: 3)
        #expect(keys["k3"] == nil && keys["k4"] == 4 && keys["k2"] == 9 && keys["k5"] == 5)
        keys.forget("k4")
        #expect(keys["k4"] == nil && keys.count == 2)
        // Keys of one length that differ only at their end, and a key made afresh (not the
        // same string storage), are told apart and found as with a plain comparison.
        var long = AppliedKeys()
        let base = String(repeating: "x", count: 40)
        for index in 0..<64 { long.record(base + "\(index % 10)\(index / 10)", version: UInt64(index), keeping: 64) }
        for index in 0..<64 {
            let fresh = String(decoding: Array((base + "\(index % 10)\(index / 10)").utf8), as: UTF8.self)
            #expect(long[fresh] == UInt64(index))
        }
        #expect(long[base + "99"] == nil && long.count == 64)
    }
}
