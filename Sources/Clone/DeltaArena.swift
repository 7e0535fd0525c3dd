/// Where a packed value's delta lies in its map's `DeltaArena`: the chunk (high 16 bits of
/// `start`), the offset in it (low 16 bits), and the length.
struct DeltaSlot: Equatable {
    let start: UInt32
    let count: UInt16

    var chunk: Int { Int(start >> 16) }
    var offset: Int { Int(start & 0xFFFF) }
}

/// A value as a map holds it: whole, or packed (`ValueDeltas`) as a delta in the map's
/// `DeltaArena`. Eight bytes either way, as the array alone was.
enum HeldBytes {
    case whole([UInt8])
    case packed(DeltaSlot)
}

/// The deltas of a map's packed values, end to end in chunks of 64 KiB. A delta in an array of
/// its own paid the array's 32-byte head and malloc's rounding: about 50 bytes over its 60. A
/// released delta leaves a hole; once holes are half of what the chunks hold, `compact` writes
/// the live deltas into new chunks.
struct DeltaArena {
    static let chunkBytes = 1 << 16
    /// Chunks below this many bytes in all are never compacted: there is little to win.
    static let compactAbove = 2 * chunkBytes

    private var chunks: [[UInt8]] = []
    /// The bytes the chunks hold, holes included.
    private(set) var usedBytes = 0
    /// The bytes of the deltas entries hold: a delta two entries share counts twice.
    private(set) var liveBytes = 0

    /// Stores `delta`; nil if it is empty, longer than a slot can say, or the arena is full.
    mutating func append(_ delta: UnsafeRawBufferPointer) -> DeltaSlot? {
        guard !delta.isEmpty, delta.count <= Int(UInt16.max) else { return nil }
        if chunks.isEmpty || chunks[chunks.count - 1].count + delta.count > Self.chunkBytes {
            guard chunks.count < 1 << 16 else { return nil }
            var chunk: [UInt8] = []
            chunk.reserveCapacity(Self.chunkBytes)
            chunks.append(chunk)
        }
        let last = chunks.count - 1
        let offset = chunks[last].count
        chunks[last].append(contentsOf: delta)
        usedBytes += delta.count
        liveBytes += delta.count
        return DeltaSlot(start: UInt32(last) << 16 | UInt32(offset), count: UInt16(delta.count))
    }

    mutating func append(_ delta: [UInt8]) -> DeltaSlot? {
        delta.withUnsafeBytes { append($0) }
    }

    /// `slot` held by one more entry.
    mutating func share(_ slot: DeltaSlot) {
        liveBytes += Int(slot.count)
    }

    /// `slot` held by one entry fewer; its bytes stay until `compact`.
    mutating func release(_ slot: DeltaSlot) {
        liveBytes -= Int(slot.count)
    }

    func withBytes<R>(of slot: DeltaSlot, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        chunks[slot.chunk].withUnsafeBytes { chunk in
            body(UnsafeRawBufferPointer(rebasing: chunk[slot.offset..<(slot.offset + Int(slot.count))]))
        }
    }

    func bytes(of slot: DeltaSlot) -> [UInt8] {
        withBytes(of: slot) { Array($0) }
    }

    var wantsCompaction: Bool {
        usedBytes > Self.compactAbove && usedBytes > 2 * liveBytes
    }

    /// Writes the deltas `store`'s entries hold into new chunks, and points the entries at them;
    /// a delta two entries shared stays shared.
    mutating func compact<Key, Entry: PackableEntry>(_ store: inout [Key: Entry]) {
        var fresh = DeltaArena()
        var moved: [UInt32: DeltaSlot] = [:]
        var index = store.values.startIndex
        while index != store.values.endIndex {
            if case .packed(let slot) = store.values[index].held {
                let target: DeltaSlot
                if let done = moved[slot.start] {
                    fresh.share(done)
                    target = done
                } else {
                    // Every delta fitted a chunk once, so it fits one again.
                    target = withBytes(of: slot) { fresh.append($0) }!
                    moved[slot.start] = target
                }
                store.values[index].held = .packed(target)
            }
            store.values.formIndex(after: &index)
        }
        self = fresh
    }
}
