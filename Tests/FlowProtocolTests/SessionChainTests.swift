import FlowProtocol
import Testing

@Suite("Session chain")
struct SessionChainTests {
    /// The table of Protocols/README.md §4, from the follower's side (other sessions never arrive).
    @Test func followsTheReadmeExample() {
        var chain = SessionChain(snapshotSequence: 42)
        #expect(chain.accept(sequence: 43, sprev: 41) == .apply)
        #expect(chain.accept(sequence: 45, sprev: 43) == .apply)
        #expect(chain.accept(sequence: 45, sprev: 43) == .discard)
        #expect(chain.last == 45)
        #expect(chain.accept(sequence: 48, sprev: 46) == .resync)
        #expect(chain.last == 45)
    }

    @Test func firstUpdateAfterTheSnapshotMayPointAnywhereAtOrBeforeIt() {
        var fresh = SessionChain(snapshotSequence: 10)
        #expect(fresh.accept(sequence: 11, sprev: 0) == .apply)
        var after = SessionChain(snapshotSequence: 10)
        #expect(after.accept(sequence: 12, sprev: 10) == .apply)
        var missed = SessionChain(snapshotSequence: 10)
        #expect(missed.accept(sequence: 13, sprev: 11) == .resync)
    }

    @Test func updatesAlreadyInTheSnapshotAreDiscarded() {
        var chain = SessionChain(snapshotSequence: 42)
        #expect(chain.accept(sequence: 41, sprev: 0) == .discard)
        #expect(chain.accept(sequence: 42, sprev: 41) == .discard)
    }

    /// A KVPUB that arrives after the snapshot but whose predecessor is also after it: it linked to one we never saw.
    @Test func laterUpdatesMustLinkToTheLastApplied() {
        var chain = SessionChain(snapshotSequence: 5)
        #expect(chain.accept(sequence: 6, sprev: 3) == .apply)
        #expect(chain.accept(sequence: 9, sprev: 5) == .resync)
        #expect(chain.accept(sequence: 9, sprev: 6) == .apply)
    }
}
