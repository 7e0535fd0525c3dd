import MessagePath

/// A KVSET that passed validation, ready for the fault seam and the store.
struct AcceptedSet {
    var key: [UInt8]
    /// Nil when the frame was empty.
    var uuid: WriteUUID?
    var properties: [UInt8]
    var ttl: Duration?
    var value: [UInt8]
    /// A delete the server made itself because the key's ttl ran out.
    var expired = false
    /// The writing agent's id when it asked for a confirmation (property `ack`).
    var ackTo: [UInt8]?
    /// The writer's User-Id (closed mode), for fault rules aimed at one plugin.
    var writer: String?
    /// The writing agent and its count of writes (`wseq`), when it said.
    var order: WriteOrder?
    /// The writing process and its incarnation (`wgen`), when it said.
    var generation: WriterGeneration?
}

/// `<name>:<number>` as a Flowbus agent writes it in two properties: `wseq`, its id and how many
/// writes it had queued with this one (two writes of one agent arrive in this order unless
/// something on the way reordered them), and `wgen`, its writer and incarnation.
struct NumberedName: Equatable {
    var name: [UInt8]
    var number: UInt64

    /// Split at the last colon (a name may hold colons), or nil.
    init?(_ text: String) {
        self.init(Array(text.utf8)[...])
    }

    /// The same, read as bytes.
    init?(_ bytes: ArraySlice<UInt8>) {
        guard let (colon, number) = bytes.withUnsafeBytes({ Self.split($0) }) else { return nil }
        name = Array(bytes[bytes.startIndex..<(bytes.startIndex + colon)])
        self.number = number
    }

    /// The same, the name taken from `names` (an array is made only for a name it does not
    /// hold): this runs for every write the server takes.
    init?(_ bytes: ArraySlice<UInt8>, names: inout InternedBytes) {
        guard let parsed = bytes.withUnsafeBytes({ NumberedName($0, names: &names) }) else { return nil }
        self = parsed
    }

    /// The same, read where the socket holds the bytes.
    init?(_ bytes: UnsafeRawBufferPointer, names: inout InternedBytes) {
        guard let (colon, number) = Self.split(bytes) else { return nil }
        name = names.interned(UnsafeRawBufferPointer(rebasing: bytes[0..<colon]))
        self.number = number
    }

    /// Where the last colon is (an offset into `bytes`) and the number after it.
    private static func split(_ bytes: UnsafeRawBufferPointer) -> (colon: Int, number: UInt64)? {
        guard let colon = bytes.lastIndex(of: UInt8(ascii: ":")), colon > 0, colon < bytes.count - 1,
              bytes.count - colon - 1 <= 20 else { return nil }
        var number: UInt64 = 0
        for digit in bytes[(colon + 1)...] {
            guard digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "9") else { return nil }
            let (times10, overflow) = number.multipliedReportingOverflow(by: 10)
            let (sum, carry) = times10.addingReportingOverflow(UInt64(digit - UInt8(ascii: "0")))
            guard !overflow, !carry else { return nil }
            number = sum
        }
        return (colon, number)
    }

    /// Whether `self` comes before `other` from the same agent or writer.
    func precedes(_ other: NumberedName) -> Bool { name == other.name && number < other.number }
}

/// A writing agent's id and its count of writes (`wseq`).
typealias WriteOrder = NumberedName
/// A writing process and its incarnation (`wgen`).
typealias WriterGeneration = NumberedName

/// The write order of the last deleted keys, oldest forgotten first.
typealias RecentDeletes = RecentValues<KeyBytes, WriteOrder>
