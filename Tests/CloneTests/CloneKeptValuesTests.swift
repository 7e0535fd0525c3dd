import Clone
import Foundation
import Testing
import ZeroMQ

/// `CloneAgent.keepValues(where:)`: an agent that follows a whole subtree for its changes but
/// holds only some of its values (issue 16: the navigation owner held every session's view-model
/// states).
@Suite("Clone agent keeping only some values")
struct CloneKeptValuesTests {
    @Test("keys left out are let go at once and never held again, yet their changes still stream")
    func leftOutKeysStillStream() async throws {
        let fixture = try CloneFixture()
        let writer = try await fixture.syncedAgent(["/s/"])
        let follower = try await fixture.syncedAgent(["/s/"])
        try writer.set(key: "/s/a/nav", value: Array("n1".utf8))
        try writer.set(key: "/s/a/vm/x", value: Array("v1".utf8))
        #expect(await eventually { follower.text("/s/a/vm/x") == "v1" && follower.text("/s/a/nav") == "n1" })

        follower.keepValues { !$0.contains("/vm/") }
        #expect(follower.get("/s/a/vm/x") == nil, "let go when the filter is set")
        #expect(follower.text("/s/a/nav") == "n1")

        let stream = follower.updates(prefix: "/s/", includeCurrent: true)
        try writer.set(key: "/s/a/vm/x", value: Array("v2".utf8))
        try writer.set(key: "/s/a/nav", value: Array("n2".utf8))
        var seen: [String] = []
        for await update in stream {
            seen.append("\(update.key)=\(String(decoding: update.value, as: UTF8.self))")
            if update.key == "/s/a/nav" && update.value == Array("n2".utf8) { break }
        }
        #expect(seen == ["/s/a/nav=n1", "/s/a/vm/x=v2", "/s/a/nav=n2"], "the current values held first, then every change")
        #expect(follower.get("/s/a/vm/x") == nil, "a change of a key left out is not held")
        #expect(follower.text("/s/a/nav") == "n2")
        #expect(await follower.textMap(prefix: "/s/") == ["/s/a/nav": "n2"])
        #expect(writer.text("/s/a/vm/x") == "v2", "other agents keep everything")
    }
}
