import MessagePath

/// An entry of a map whose values may be packed (`ValueDeltas`): the server's `Stored`, an
/// agent's `AgentView.Held`.
protocol PackableEntry {
    var sequence: UInt64 { get }
    /// The value as it came, or packed.
    var heldBytes: [UInt8] { get set }
    /// `heldBytes` is a delta.
    var packed: Bool { get set }
    /// The key waits in the map's `PackQueue`.
    var queued: Bool { get set }
}

/// The values a map holds packed, the bytes they hold so, and the bytes they would hold whole.
struct PackedTally: Equatable {
    var values = 0
    var bytes = 0
    var valueBytes = 0

    mutating func add(_ entry: some PackableEntry) {
        guard entry.packed else { return }
        values += 1
        bytes += entry.heldBytes.count
        valueBytes += ValueDeltas.unpackedCount(entry.heldBytes)
    }

    /// Takes an entry that leaves the map (replaced or deleted) off the counts.
    mutating func remove(_ entry: some PackableEntry) {
        guard entry.packed else { return }
        values -= 1
        bytes -= entry.heldBytes.count
        valueBytes -= ValueDeltas.unpackedCount(entry.heldBytes)
    }
}

/// Keys whose values may be packed once they have stayed unchanged for `packValuesAfter` (the
/// server's, `KeyBytes`; an agent's, `String`), in the order they fall due. A key waits here once
/// at most (`PackableEntry.queued`): written again while it waits, it is looked at when it comes
/// up and queued again for its new value.
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

extension PackQueue where Key: Hashable {
    /// Puts `entry` under `key`, queued to be packed once it has stayed unchanged for `after`
    /// (nil: never) if it is at least `smallest` bytes; a key already waiting keeps its place.
    /// Returns the entry it replaced, taken off `tally`.
    mutating func store<Entry: PackableEntry>(
        _ entry: Entry, under key: Key, in store: inout [Key: Entry], after: Duration?, smallest: Int, tally: inout PackedTally
    ) -> Entry? {
        var entry = entry
        let packable = after != nil && entry.heldBytes.count >= smallest
        entry.queued = packable
        let replaced = store.updateValue(entry, forKey: key)
        if replaced?.queued == true {
            if !packable { store[key]?.queued = true }
        } else if packable, let after {
            push(key, sequence: entry.sequence, due: .now() + after)
        }
        if let replaced { tally.remove(replaced) }
        return replaced
    }

    /// Packs, with `pack`, the values of `store` that have stayed unchanged for `after`; looks at
    /// most at `limit` keys. One written again since it was queued waits again for its new value.
    mutating func packDue<Entry: PackableEntry>(
        in store: inout [Key: Entry], now: MonotonicTime, after: Duration, limit: Int, tally: inout PackedTally,
        pack: ([UInt8], Key) -> [UInt8]?
    ) {
        var looked = 0
        while looked < limit, let item = popDue(now: now) {
            looked += 1
            guard let index = store.index(forKey: item.key), store.values[index].queued else { continue }
            if store.values[index].sequence != item.sequence {
                push(item.key, sequence: store.values[index].sequence, due: now + after)
                continue
            }
            store.values[index].queued = false
            guard !store.values[index].packed, let delta = pack(store.values[index].heldBytes, item.key) else { continue }
            store.values[index].heldBytes = delta
            store.values[index].packed = true
            tally.add(store.values[index])
        }
    }
}
