/// The follower's side of the session chain (Protocols/README.md §4): decides, from a KVPUB's
/// global sequence and its `sprev` property, whether a client following one session subtree
/// applies it, discards it as a duplicate, or has missed an update and must resync.
public struct SessionChain: Sendable, Hashable {
    public enum Verdict: Sendable, Hashable {
        case apply
        /// Not newer than what was already applied (12/CHP's duplicate rule).
        case discard
        /// An update of this session was missed: send a new ICANHAZ? and start a new chain from its KTHXBAI.
        case resync
    }

    /// The KTHXBAI sequence of the snapshot this chain started from.
    public let snapshotSequence: UInt64
    /// The sequence of the last KVPUB applied, or `snapshotSequence` before the first.
    public private(set) var last: UInt64
    private var appliedSinceSnapshot = false

    public init(snapshotSequence: UInt64) {
        self.snapshotSequence = snapshotSequence
        self.last = snapshotSequence
    }

    /// Judges one KVPUB of the session; on `.apply` it becomes the chain's `last`.
    public mutating func accept(sequence: UInt64, sprev: UInt64) -> Verdict {
        guard sequence > last else { return .discard }
        let linked = appliedSinceSnapshot ? sprev == last : sprev <= snapshotSequence
        guard linked else { return .resync }
        last = sequence
        appliedSinceSnapshot = true
        return .apply
    }
}
