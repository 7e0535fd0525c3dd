@testable import FlowKit
import FlowProtocol
import Testing

@Suite("Recent replies")
struct RecentRepliesTests {
    static func envelope(_ text: String) throws -> Envelope {
        var echo = Flowbus_V1_Echo()
        echo.text = text
        return try Envelope.wrapping(echo, writer: "test")
    }

    @Test("keeps the last replies by key, forgets the oldest past capacity, and never keeps a call without a key")
    func bounded() throws {
        let replies = RecentReplies(capacity: 3)
        for key in ["a", "b", "c"] { replies[key] = try Self.envelope(key) }
        #expect(try replies["a"]?.unwrap(Flowbus_V1_Echo.self).text == "a")
        // The first reply for a key stays: a retry must get the same answer.
        replies["a"] = try Self.envelope("changed")
        #expect(try replies["a"]?.unwrap(Flowbus_V1_Echo.self).text == "a")
        replies["d"] = try Self.envelope("d")
        #expect(replies["a"] == nil)
        #expect(replies["b"] != nil && replies["c"] != nil && replies["d"] != nil)
        replies[""] = try Self.envelope("no key")
        #expect(replies[""] == nil)
        for key in ["e", "f", "g"] { replies[key] = try Self.envelope(key) }
        #expect(["b", "c", "d"].allSatisfy { replies[$0] == nil })
        #expect(["e", "f", "g"].allSatisfy { replies[$0] != nil })
    }
}
