/// Byte strings that repeat across many stored values (an agent's id in every key it wrote), kept
/// once: `interned` hands back the array already held for equal bytes, so its copies share one
/// block. At `capacity` the table starts again (values already stored keep their arrays).
struct InternedBytes {
    let capacity: Int
    private var table: Set<KeyBytes> = []
    /// The string handed out last: writes come in runs from one writer, so most lookups end here,
    /// with one `memcmp` and no hashing.
    private var last: [UInt8]?

    init(capacity: Int) {
        precondition(capacity > 0, "the table needs room for one string")
        self.capacity = capacity
    }

    var count: Int { table.count }

    mutating func interned(_ bytes: [UInt8]) -> [UInt8] {
        if let last, sameBytes(last, bytes) { return last }
        let held = lookUp(bytes)
        last = held
        return held
    }

    /// The same for bytes that are not yet an array: one is made only for a string not held.
    mutating func interned(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        if let last, sameBytes(last, bytes) { return last }
        let held = lookUp(Array(bytes))
        last = held
        return held
    }

    private mutating func lookUp(_ bytes: [UInt8]) -> [UInt8] {
        if let held = table.firstIndex(of: KeyBytes(bytes)) { return table[held].bytes }
        if table.count >= capacity { table.removeAll() }
        table.insert(KeyBytes(bytes))
        return bytes
    }
}
