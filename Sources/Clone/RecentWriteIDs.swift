/// The last `capacity` write UUIDs (16 bytes each) in a ring, with a set to look them up: what
/// the server remembers to apply a write sent twice once.
struct RecentWriteIDs {
    private typealias ID = WriteUUID

    let capacity: Int
    private var known: Set<ID> = []
    private var ring: [ID] = []
    private var next = 0

    init(capacity: Int) {
        precondition(capacity > 0, "the ring needs room for one id")
        self.capacity = capacity
        known.reserveCapacity(capacity)
        // The ring's room too, at once: its pages are touched only as ids fill it, 16 bytes each.
        // Grown by doubling, it made a 1 MiB array at the 32,769th id (a few thousand sessions
        // into app-memory) and copied half a MiB into it while the old half MiB waited for a trim.
        ring.reserveCapacity(capacity)
    }

    var count: Int { known.count }

    func contains(_ uuid: WriteUUID) -> Bool {
        known.contains(uuid)
    }

    mutating func insert(_ id: WriteUUID) {
        guard known.insert(id).inserted else { return }
        if ring.count < capacity {
            ring.append(id)
        } else {
            known.remove(ring[next])
            ring[next] = id
            next = (next + 1) % capacity
        }
    }
}

/// A KVSET's 16-byte UUID frame, held as two words (no array): what the server confirms and
/// remembers of a write, and sends on with it.
struct WriteUUID: Hashable {
    private var words: (UInt64, UInt64)

    /// The frame's bytes; nil unless there are exactly 16.
    init?(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count == 16 else { return nil }
        words = (bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self), bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
    }

    /// The 16 bytes as they came.
    func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        var words = words
        return try Swift.withUnsafeBytes(of: &words) { (bytes) throws(E) -> R in try body(bytes) }
    }

    var bytes: [UInt8] { Swift.withUnsafeBytes(of: words) { Array($0) } }

    static func == (a: WriteUUID, b: WriteUUID) -> Bool { a.words == b.words }

    func hash(into hasher: inout Hasher) {
        hasher.combine(words.0)
        hasher.combine(words.1)
    }
}
