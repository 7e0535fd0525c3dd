/// Byte strings that repeat across many stored values (an agent's id in every key it wrote), kept
/// once: `interned` hands back the array already held for equal bytes, so its copies share one
/// block. At `capacity` the table starts again (values already stored keep their arrays).
struct InternedBytes {
    let capacity: Int
    private var table: Set<[UInt8]> = []

    init(capacity: Int) {
        precondition(capacity > 0, "the table needs room for one string")
        self.capacity = capacity
    }

    var count: Int { table.count }

    mutating func interned(_ bytes: [UInt8]) -> [UInt8] {
        if let held = table.firstIndex(of: bytes) { return table[held] }
        if table.count >= capacity { table.removeAll() }
        table.insert(bytes)
        return bytes
    }
}
