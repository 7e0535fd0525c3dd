import Synchronization

/// How often one peer may do something: `perSecond` on average, `burst` at once.
public struct RateLimit: Sendable, Equatable, Codable {
    public var perSecond: Double
    public var burst: Double

    public init(perSecond: Double, burst: Double) {
        self.perSecond = perSecond
        self.burst = max(1, burst)
    }

    /// No limit at all (`perSecond` 0 on the command line).
    public static let unlimited = RateLimit(perSecond: .infinity, burst: .infinity)
    public var isUnlimited: Bool { perSecond.isInfinite }
}

/// A token bucket per peer (an address, a User-Id): each allowed act takes a token, tokens come
/// back at `limit.perSecond` up to `limit.burst`. The table holds at most `capacity` peers; when
/// it is full, peers whose bucket has refilled (no different from a new peer) are forgotten, and
/// under a flood of distinct peers the whole table is.
public final class PeerRateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var at: ContinuousClock.Instant
    }

    public let limit: RateLimit
    private let capacity: Int
    private let buckets = Mutex<[String: Bucket]>([:])

    public init(_ limit: RateLimit, capacity: Int = 16_384) {
        self.limit = limit
        self.capacity = capacity
    }

    /// Whether `peer` may act now; takes a token when it may.
    public func allow(_ peer: String, now: ContinuousClock.Instant = .now) -> Bool {
        if limit.isUnlimited { return true }
        return buckets.withLock { table in
            var bucket = table[peer] ?? Bucket(tokens: limit.burst, at: now)
            bucket.tokens = min(limit.burst, bucket.tokens + seconds(now - bucket.at) * limit.perSecond)
            bucket.at = now
            let allowed = bucket.tokens >= 1
            if allowed { bucket.tokens -= 1 }
            if table[peer] == nil, table.count >= capacity {
                table = table.filter { $0.value.tokens + seconds(now - $0.value.at) * limit.perSecond < limit.burst }
                if table.count >= capacity { table.removeAll() }
            }
            table[peer] = bucket
            return allowed
        }
    }

    /// Peers the table holds now.
    public var peers: Int { buckets.withLock { $0.count } }

    private func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
