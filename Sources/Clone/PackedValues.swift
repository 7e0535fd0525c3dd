import MessagePath

/// An entry of a map whose values may be packed (`ValueDeltas`): the server's `Stored`, an
/// agent's `AgentView.Held`.
protocol PackableEntry {
    var sequence: UInt64 { get }
    /// The value as it came, or where its delta lies in the map's `PackedValues.arena`.
    var held: HeldBytes { get set }
    /// The key waits in the map's `PackedValues` queue.
    var queued: Bool { get set }
}

extension PackableEntry {
    var packed: Bool {
        if case .packed = held { return true }
        return false
    }
}

/// The values a map holds packed, the bytes their deltas take, and the bytes they would take whole.
struct PackedTally: Equatable {
    var values = 0
    var bytes = 0
    var valueBytes = 0
}

/// A map's packed values: the keys that may be packed once they have stayed unchanged for
/// `packValuesAfter` (the server's, `KeyBytes`; an agent's, `String`), in the order they fall due;
/// the arena that holds the deltas; and their tally. A key waits in the queue once at most
/// (`PackableEntry.queued`): written again while it waits, it is looked at when it comes up and
/// queued again for its new value.
struct PackedValues<Key> {
    struct Item {
        let key: Key
        let sequence: UInt64
        let due: MonotonicTime
    }

    private var items: [Item] = []
    private var head = 0
    private(set) var arena = DeltaArena()
    private(set) var tally = PackedTally()
    /// The slot packed last: a delta equal to it (a view model's state under `/v/` and `/s/`,
    /// packed one after the other) shares it.
    private var lastSlot: DeltaSlot?

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

    /// The value `entry` holds under `key`, unpacked with `deltas` if it is packed; nil if its
    /// delta could not be read (a bug: only this map packs, against references never dropped).
    func value(of entry: some PackableEntry, key: [UInt8], deltas: ValueDeltas) -> [UInt8]? {
        switch entry.held {
        case .whole(let bytes): bytes
        case .packed(let slot): arena.withBytes(of: slot) { deltas.unpack($0, key: key) }
        }
    }

    /// The length of the value `entry` holds, packed or not.
    func valueCount(of entry: some PackableEntry) -> Int {
        switch entry.held {
        case .whole(let bytes): bytes.count
        case .packed(let slot): arena.withBytes(of: slot) { ValueDeltas.unpackedCount($0) }
        }
    }

    /// Takes an entry that has left the map (replaced or deleted) off the counts, and frees its
    /// delta. The map then calls `compactIfWanted`.
    mutating func remove(_ entry: some PackableEntry) {
        guard case .packed(let slot) = entry.held else { return }
        tally.values -= 1
        tally.bytes -= Int(slot.count)
        tally.valueBytes -= valueCount(of: entry)
        arena.release(slot)
    }

    /// Writes the live deltas into new chunks once freed ones are half of the arena.
    mutating func compactIfWanted<Entry: PackableEntry>(_ store: inout [Key: Entry]) {
        guard arena.wantsCompaction else { return }
        arena.compact(&store)
        lastSlot = nil
    }
}

extension PackedValues where Key: Hashable {
    /// Puts `entry` under `key`, queued to be packed once it has stayed unchanged for `after`
    /// (nil: never) if it is at least `smallest` bytes; a key already waiting keeps its place.
    /// Returns the length of the value it replaced, whose entry it took off the counts; nil if
    /// the key was new.
    ///
    /// `slot`, when given, is where `store` holds `key` now (looked up by the caller, the map not
    /// changed since): the entry is replaced there without hashing the key again.
    @discardableResult
    mutating func store<Entry: PackableEntry>(
        _ entry: consuming Entry, under key: Key, at slot: Dictionary<Key, Entry>.Index? = nil, in store: inout [Key: Entry],
        after: Duration?, smallest: Int
    ) -> Int? {
        let packable = after != nil && valueCount(of: entry) >= smallest
        entry.queued = packable
        let sequence = entry.sequence
        let replaced: Entry?
        if let slot {
            var previous = entry
            swap(&previous, &store.values[slot])
            replaced = previous
        } else {
            replaced = store.updateValue(entry, forKey: key)
        }
        if replaced?.queued == true {
            if !packable { store[key]?.queued = true }
        } else if packable, let after {
            push(key, sequence: sequence, due: .now() + after)
        }
        guard let replaced else { return nil }
        let replacedCount = valueCount(of: replaced)
        if replaced.packed {
            remove(replaced)
            compactIfWanted(&store)
        }
        return replacedCount
    }

    /// Takes the entry of `key` out of `store`, and off the counts; returns the length of its
    /// value, nil if there was none.
    @discardableResult
    mutating func removeValue<Entry: PackableEntry>(forKey key: Key, in store: inout [Key: Entry]) -> Int? {
        guard let removed = store.removeValue(forKey: key) else { return nil }
        let removedCount = valueCount(of: removed)
        if removed.packed {
            remove(removed)
            compactIfWanted(&store)
        }
        return removedCount
    }

    /// Packs, with `pack`, the values of `store` that have stayed unchanged for `after`; looks at
    /// most at `limit` keys. One written again since it was queued waits again for its new value.
    mutating func packDue<Entry: PackableEntry>(
        in store: inout [Key: Entry], now: MonotonicTime, after: Duration, limit: Int,
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
            guard case .whole(let value) = store.values[index].held, let delta = pack(value, item.key) else { continue }
            let slot: DeltaSlot
            if let last = lastSlot, arena.withBytes(of: last, { sameBytes(delta, $0) }) {
                arena.share(last)
                slot = last
            } else {
                guard let stored = arena.append(delta) else { continue }
                slot = stored
                lastSlot = stored
            }
            store.values[index].held = .packed(slot)
            tally.values += 1
            tally.bytes += delta.count
            tally.valueBytes += value.count
        }
        compactIfWanted(&store)
    }
}
