import Foundation
import Logging
import MessagePath

/// Keys whose values may be packed once they have stayed unchanged for `packValuesAfter` (the
/// server's, `KeyBytes`; an agent's, `String`), in the order they fall due. A key waits here once at most (`Stored.queued`): written again while it
/// waits, it is looked at when it comes up and queued again for its new value.
struct PackQueue<Key> {
    struct Item {
        let key: Key
        let sequence: UInt64
        let due: MonotonicTime
    }

    private var items: [Item] = []
    private var head = 0

    var count: Int { items.count - head }
    var nextDue: MonotonicTime? { head < items.count ? items[head].due : nil }

    mutating func push(_ key: Key, sequence: UInt64, due: MonotonicTime) {
        items.append(Item(key: key, sequence: sequence, due: due))
    }

    mutating func popDue(now: MonotonicTime) -> Item? {
        guard head < items.count, items[head].due <= now else { return nil }
        let item = items[head]
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: items.capacity <= 4096)
            head = 0
        } else if head >= 1024, head * 2 >= items.count {
            items.removeSubrange(0..<head)
            head = 0
        }
        return item
    }
}

extension CloneServerLoop {
    /// Values are packed once unchanged for a while (`CloneServerConfiguration.packValuesAfter`).
    var packing: Bool { configuration.packValuesAfter != nil }

    /// The value `stored` holds, unpacked if it is packed.
    func value(of stored: Stored) -> [UInt8] {
        guard stored.packed else { return stored.bytes }
        guard let value = deltas.unpack(stored.bytes) else {
            // Only this loop packs, against references it never drops: a delta it cannot read is
            // a bug, never input. Logged rather than trapped; the key reads as deleted.
            logger.error("clone server: a packed value could not be unpacked", metadata: ["flowbus.service": "clone"])
            return []
        }
        return value
    }

    /// Takes a packed value that leaves the map off the packing counters.
    func forgetPacked(_ stored: Stored) {
        guard stored.packed else { return }
        statistics.valuesPacked -= 1
        statistics.packedBytes -= stored.bytes.count
        statistics.packedValueBytes -= ValueDeltas.unpackedCount(stored.bytes)
    }

    /// Packs the values that have stayed unchanged long enough; at most `limit` keys a pass, so
    /// the loop is never away from its sockets for long (the rest are due at once, next pass).
    func packDue(now: MonotonicTime, limit: Int = 256) {
        guard let after = configuration.packValuesAfter else { return }
        var looked = 0
        while looked < limit, let item = packQueue.popDue(now: now) {
            looked += 1
            guard let index = store.index(forKey: item.key), store.values[index].queued else { continue }
            if store.values[index].sequence != item.sequence {
                // Written again since it was queued: its new value waits its own while.
                packQueue.push(item.key, sequence: store.values[index].sequence, due: now + after)
                continue
            }
            store.values[index].queued = false
            guard !store.values[index].packed else { continue }
            let value = store.values[index].bytes
            let delta: [UInt8]
            if let lastPacked, sameBytes(value, lastPacked.value) {
                delta = lastPacked.delta
            } else {
                guard let packed = deltas.pack(value, key: item.key.bytes) else { continue }
                delta = packed
                lastPacked = (value, packed)
            }
            statistics.valuesPacked += 1
            statistics.packedBytes += delta.count
            statistics.packedValueBytes += store.values[index].bytes.count
            store.values[index].bytes = delta
            store.values[index].packed = true
        }
    }
}
