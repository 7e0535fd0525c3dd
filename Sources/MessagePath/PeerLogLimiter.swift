import Foundation
import Synchronization

/// Lets a complaint about one peer through once per period, so a peer that sends
/// garbage in a loop cannot flood the log. Counters still count every occurrence.
public final class PeerLogLimiter: Sendable {
    private struct Key: Hashable {
        var peer: [UInt8]
        var kind: String
    }

    private let period: Duration
    private let capacity: Int
    private let lastLogged = Mutex<[Key: ContinuousClock.Instant]>([:])

    public init(period: Duration = .seconds(10), capacity: Int = 4096) {
        self.period = period
        self.capacity = capacity
    }

    /// True when a message about `kind` from `peer` should be logged now.
    public func shouldLog(peer: [UInt8], kind: String, now: ContinuousClock.Instant = .now) -> Bool {
        let key = Key(peer: peer, kind: kind)
        return lastLogged.withLock { table in
            if let last = table[key], now - last < period { return false }
            if table.count >= capacity {
                // Forget peers that have been quiet for a period; under a flood of distinct
                // peers, forget everything rather than grow without bound.
                table = table.filter { now - $0.value < period }
                if table.count >= capacity { table.removeAll() }
            }
            table[key] = now
            return true
        }
    }
}

extension Collection<UInt8> {
    /// A printable form of a peer id or frame for logs: text when it is printable ASCII, else hex.
    public var printable: String {
        if !isEmpty, allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) {
            return String(decoding: self, as: UTF8.self)
        }
        return "0x" + map { String(format: "%02x", $0) }.joined()
    }
}
