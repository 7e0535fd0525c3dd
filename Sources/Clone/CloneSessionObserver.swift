import Glibc

/// One change the server published under a session subtree `/s/<id>/`, for the host's session
/// histories. Frames are shared with the server's store, not copied.
public struct CloneSessionUpdate: Sendable {
    public var key: [UInt8]
    public var sequence: UInt64
    /// `sprev`: the sequence of the previous change of the same session, 0 for its first.
    public var sessionPrevious: UInt64
    /// The value as written (one Envelope); empty for a delete or a ttl expiry.
    public var value: [UInt8]
    /// True when the server deleted the key because its ttl ran out.
    public var expired: Bool
    /// The host's wall clock when the server sequenced it.
    public var atUnixNanos: Int64

    public init(key: [UInt8], sequence: UInt64, sessionPrevious: UInt64, value: [UInt8], expired: Bool, atUnixNanos: Int64) {
        self.key = key
        self.sequence = sequence
        self.sessionPrevious = sessionPrevious
        self.value = value
        self.expired = expired
        self.atUnixNanos = atUnixNanos
    }
}

extension CloneServerLoop {
    /// Runs on the server thread for every change of a session key while an observer is set.
    func observeSessionUpdate(_ update: AcceptedSet, previous: UInt64, observer: @Sendable (CloneSessionUpdate) -> Void) {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        observer(CloneSessionUpdate(
            key: update.key, sequence: sequence, sessionPrevious: previous, value: update.value,
            expired: update.expired, atUnixNanos: Int64(spec.tv_sec) &* 1_000_000_000 &+ Int64(spec.tv_nsec)))
    }
}
