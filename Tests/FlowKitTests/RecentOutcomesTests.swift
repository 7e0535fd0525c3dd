import FlowProtocol
@testable import FlowKit
import Testing

@Suite("Recent outcomes")
struct RecentOutcomesTests {
    @Test func theFirstAnswerStandsAnEmptyKeyIsNeverKeptAndTheOldestGoesFirst() {
        var outcomes = RecentOutcomes<[UInt8]>(capacity: 3)
        outcomes.remember([1], for: "s1\u{0}k1")
        outcomes.remember([2], for: "s1\u{0}k1")
        outcomes.remember([9], for: "")
        #expect(outcomes["s1\u{0}k1"] == [1])
        #expect(outcomes[""] == nil)
        // Keys that differ in one character, or only in where the session ends, are different keys.
        outcomes.remember([3], for: "s1\u{0}k2")
        outcomes.remember([4], for: "s1k\u{0}1")
        #expect(outcomes["s1\u{0}k2"] == [3] && outcomes["s1k\u{0}1"] == [4])
        outcomes.remember([5], for: "s2\u{0}k1")
        #expect(outcomes["s1\u{0}k1"] == nil, "the oldest of four with room for three is forgotten")
        #expect(outcomes["s2\u{0}k1"] == [5])
    }

    @Test func repliesAreKeptEncodedAndComeBackTheSame() {
        var outcomes = RecentOutcomes<[UInt8]>(capacity: 8)
        var reply = Flowbus_V1_CoordinatorReply()
        reply.ok = true
        reply.navVersion = 42
        outcomes.remember(reply, for: "s\u{0}a")
        let refusal = CoordinatorRuntime.intentRefusal(WireError(.staleIntent, "the screen moved on", hint: "act on the screen shown now"))
        outcomes.remember(refusal, for: "s\u{0}b")
        #expect(outcomes["s\u{0}a", as: Flowbus_V1_CoordinatorReply.self] == reply)
        #expect(outcomes["s\u{0}b", as: Flowbus_V1_IntentReply.self] == refusal)
        #expect(outcomes["s\u{0}c", as: Flowbus_V1_IntentReply.self] == nil)
    }

    /// 100,000 keys of one shape give 100,000 different 128-bit keys.
    @Test func keysOfOneShapeDoNotCollide() {
        var seen = Set<OutcomeKey>()
        for index in 0..<100_000 { seen.insert(OutcomeKey("session\(index % 97)\u{0}appear/\(index)")) }
        #expect(seen.count == 100_000)
    }
}
