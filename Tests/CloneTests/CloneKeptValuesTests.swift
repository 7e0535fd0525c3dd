import Clone
import Foundation
import MessagePath
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
        #expect(follower.textMap(prefix: "/s/") == ["/s/a/nav": "n2"])
        // The writer holds its own write once the server's publication of it reaches it, which
        // may come after the follower's (seen once under a loaded test run).
        #expect(await eventually { writer.text("/s/a/vm/x") == "v2" }, "other agents keep everything")
    }

    /// A resync compares the snapshot with what the agent holds; for a key whose value it does
    /// not hold, only an entry newer than what it had seen is a change (else every resync would
    /// report every such key again: the navigation owner took that for activity in every session).
    @Test("after a resync, a key left out is reported only if it changed while the agent was cut off")
    func aResyncReportsOnlyNewerLeftOutKeys() async throws {
        let fixture = try CloneFixture()
        let link = FaultRules()
        let follower = try await fixture.syncedAgent(["/s/g1/"]) { $0.incomingFaults = link }
        let writer = try await fixture.syncedAgent(["/w/"])
        try writer.set(key: "/s/g1/vm/old", value: "unchanged".bytes)
        try writer.set(key: "/s/g1/vm/moved", value: "before".bytes)
        #expect(await eventually { follower.text("/s/g1/vm/moved") == "before" })
        follower.keepValues { !$0.contains("/vm/") }
        let stream = follower.updates(prefix: "/s/g1/", includeCurrent: false)

        // One update lost on the way: the next one breaks the session chain, and the agent resyncs.
        try link.install(FaultRule(id: "lossy", scope: .key, prefix: "/s/g1/vm/moved", action: .drop))
        try writer.set(key: "/s/g1/vm/moved", value: "after".bytes)
        #expect(await eventually { follower.statistics.faultDropped == 1 })
        link.removeAll()
        try writer.set(key: "/s/g1/nav", value: "n".bytes)
        #expect(await eventually { follower.statistics.resyncs >= 1 && follower.text("/s/g1/nav") == "n" })
        try writer.set(key: "/s/g1/end", value: "e".bytes)
        var seen: [String] = []
        for await update in stream {
            seen.append(update.key)
            if update.key == "/s/g1/end" { break }
        }
        #expect(seen.contains("/s/g1/vm/moved"), "changed while cut off: reported (\(seen))")
        #expect(!seen.contains("/s/g1/vm/old"), "unchanged and not held: not reported again (\(seen))")
    }
}
