/// The last `capacity` write UUIDs (16 bytes each) in a ring, with a set to look them up: what
/// the server remembers to apply a write sent twice once.
struct RecentWriteIDs {
    private struct ID: Hashable {
        var high: UInt64
        var low: UInt64

        init(_ bytes: [UInt8]) {
            var high: UInt64 = 0, low: UInt64 = 0
            for index in 0..<8 { high = high << 8 | UInt64(bytes[index]) }
            for index in 8..<16 { low = low << 8 | UInt64(bytes[index]) }
            self.high = high
            self.low = low
        }
    }

    let capacity: Int
    private var known: Set<ID> = []
    private var ring: [ID] = []
    private var next = 0

    init(capacity: Int) {
        precondition(capacity > 0, "the ring needs room for one id")
        self.capacity = capacity
        known.reserveCapacity(capacity)
    }

    var count: Int { known.count }

    /// `uuid` must be 16 bytes.
    func contains(_ uuid: [UInt8]) -> Bool {
        known.contains(ID(uuid))
    }

    mutating func insert(_ uuid: [UInt8]) {
        let id = ID(uuid)
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
