import MessagePath
import Testing

/// The token buckets behind the connection and snapshot rate limits.
@Suite("Peer rate limiter")
struct PeerRateLimiterTests {
    @Test("a burst is allowed at once, then the rate, per peer")
    func burstThenRate() {
        let limiter = PeerRateLimiter(RateLimit(perSecond: 10, burst: 5))
        let start = ContinuousClock.now
        let first = (0..<8).map { _ in limiter.allow("a", now: start) }
        #expect(first == [true, true, true, true, true, false, false, false])
        // Another peer has its own bucket.
        #expect(limiter.allow("b", now: start))
        // 10 a second: one token every 100 ms, never more than the burst.
        #expect(!limiter.allow("a", now: start + .milliseconds(50)))
        #expect(limiter.allow("a", now: start + .milliseconds(160)))
        let later = start + .seconds(60)
        #expect((0..<7).filter { _ in limiter.allow("a", now: later) }.count == 5)
    }

    @Test("unlimited allows everything and keeps no table")
    func unlimited() {
        let limiter = PeerRateLimiter(.unlimited)
        #expect((0..<10_000).allSatisfy { limiter.allow("peer \($0 % 3)") })
        #expect(limiter.peers == 0)
    }

    @Test("the table stays within its capacity under a flood of distinct peers")
    func bounded() {
        let limiter = PeerRateLimiter(RateLimit(perSecond: 1, burst: 2), capacity: 100)
        let now = ContinuousClock.now
        for index in 0..<10_000 { _ = limiter.allow("peer \(index)", now: now) }
        #expect(limiter.peers <= 100)
        // A peer that has used its burst is still held back while the table has room.
        let limited = PeerRateLimiter(RateLimit(perSecond: 1, burst: 2), capacity: 100)
        _ = limited.allow("x", now: now)
        _ = limited.allow("x", now: now)
        for index in 0..<50 { _ = limited.allow("peer \(index)", now: now) }
        #expect(!limited.allow("x", now: now))
    }
}
