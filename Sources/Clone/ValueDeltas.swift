import Foundation
import WireCheck

/// Values kept as their differences from a similar value held once: a delta, the copies it makes
/// from its reference and the bytes it adds between them. Values that sit under the same parent
/// (`/c/app/<session>`), or at the same path in every session (`/s/<id>/nav`), differ in a few
/// ids and times: packed against one of them, a navigation of 432 bytes is about 85.
///
/// Nothing here knows what a value means; `shape(of:)` groups keys by their path alone. The first
/// values of a shape become its references (at most `referencesPerShape`), from the second on (the
/// first stays as it is); a later one that packs to more than a quarter of its size against all of
/// them becomes one too while there is room.
///
/// A value names its own key more often than not (a session's values carry the session's id), and
/// the name is what differs from the reference, which names another key: a delta writes it as one
/// byte, the key's `name(of:)`, its last part (`/c/app/<id>`) or its session (`/s/<id>/nav`).
///
/// A delta: varint reference number, varint unpacked length, then operations to its end, each a
/// varint `n`: `n` even, `n / 2` bytes follow as they are; `n` = 1, the key's name; `n` odd and
/// more, `n / 2` bytes are copied from the reference at the varint offset that follows. A delta
/// reads back only with the key it was packed for.
public struct ValueDeltas: Sendable {
    public struct Limits: Sendable {
        /// References over all shapes; past it, values of new shapes stay as they are.
        public var references = 256
        public var referencesPerShape = 4
        /// The bytes all references hold, with their match tables.
        public var referenceBytes = 4 * 1024 * 1024
        /// Values shorter than this stay as they are: a delta would save little.
        public var smallestValue = 48
        /// Values longer than this stay as they are, and become no reference.
        public var largestValue = 32 * 1024

        public init(references: Int = 256, referencesPerShape: Int = 4) {
            self.references = references
            self.referencesPerShape = referencesPerShape
        }
    }

    /// A value held whole, with a table of where each 4-byte run of it starts.
    final class Reference: Sendable {
        let bytes: [UInt8]
        /// By the hash of 4 bytes: the first offset + 1 where they start, 0 for none.
        let table: [UInt16]
        let shift: UInt32

        init(_ bytes: [UInt8]) {
            self.bytes = bytes
            var bits: UInt32 = 6
            while (1 << bits) < bytes.count, bits < 15 { bits += 1 }
            let shift = 32 - bits
            self.shift = shift
            var table = [UInt16](repeating: 0, count: 1 << bits)
            bytes.withUnsafeBytes { raw in
                guard raw.count >= 4 else { return }
                for offset in 0...(raw.count - 4) {
                    let slot = Int(Reference.hash(raw.loadUnaligned(fromByteOffset: offset, as: UInt32.self), shift))
                    if table[slot] == 0 { table[slot] = UInt16(offset + 1) }
                }
            }
            self.table = table
        }

        var footprint: Int { bytes.count + 2 * table.count + 64 }

        @inline(__always)
        static func hash(_ word: UInt32, _ shift: UInt32) -> UInt32 { (word &* 2_654_435_761) >> shift }
    }

    public let limits: Limits
    private(set) var references: [Reference] = []
    private var byShape: [KeyBytes: [Int32]] = [:]
    public private(set) var referenceFootprint = 0
    /// Shapes only one key has offered values for, none of which has become a reference, with
    /// the hash of that key. A shape's first reference is made from the value of its second
    /// key: a reference costs its value and a table of twice its size, so a key alone of its shape
    /// (a host's only session) would pay for it and gain nothing. Forgotten all at once when it
    /// grows past `lonelyShapesLimit`.
    private(set) var lonelyShapes: [KeyBytes: Int] = [:]
    static let lonelyShapesLimit = 4096

    public init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// The group of keys whose values are packed against the same references: a key under a
    /// session (`/s/<id>/rest`) by its path within the session, any other by its parent.
    static func shape(of key: [UInt8]) -> [UInt8] {
        if let length = key.withUnsafeBytes({ CloneKeyRules.sessionPrefixLength($0) }) {
            return Array("/s//".utf8) + key[length...]
        }
        guard let slash = key.lastIndex(of: UInt8(ascii: "/")) else { return [] }
        return Array(key[...slash])
    }

    /// The part of `key` that differs between the keys of one shape: its session's id for a key
    /// under a session, else its last part. Empty when too short to be worth an operation.
    static func name(of key: [UInt8]) -> ArraySlice<UInt8> {
        let name: ArraySlice<UInt8>
        if let length = key.withUnsafeBytes({ CloneKeyRules.sessionPrefixLength($0) }) {
            name = key[3..<(length - 1)]
        } else if let slash = key.lastIndex(of: UInt8(ascii: "/")) {
            name = key[(slash + 1)...]
        } else {
            name = key[...]
        }
        return name.count >= smallestName ? name : []
    }

    /// A shorter name costs as much written as it is.
    static let smallestName = 4

    /// `value` as a delta, or nil when it stays better as it is (too small or large, nothing
    /// like it held, or its delta would not save a quarter).
    public mutating func pack(_ value: [UInt8], key: [UInt8]) -> [UInt8]? {
        guard value.count >= limits.smallestValue, value.count <= limits.largestValue else { return nil }
        let shape = KeyBytes(Self.shape(of: key))
        let name = Self.name(of: key)
        let budget = value.count - value.count / 4
        var best: [UInt8]?
        for number in byShape[shape] ?? [] {
            if let delta = Self.delta(value, from: references[Int(number)], number: number, name: name, budget: best.map { $0.count - 1 } ?? budget) {
                best = delta
            }
        }
        // Packed to a quarter or less: good enough. Else it becomes a reference of its shape, if
        // there is room (its delta is then one copy), so the values like it that follow pack well.
        if let best, best.count * 4 <= value.count { return best }
        guard (byShape[shape]?.count ?? 0) < limits.referencesPerShape, references.count < limits.references,
              value.count <= Int(UInt16.max) else { return best }
        if byShape[shape] == nil {
            var hasher = Hasher()
            key.withUnsafeBytes { hasher.combine(bytes: $0) }
            let keyHash = hasher.finalize()
            guard let other = lonelyShapes[shape], other != keyHash else {
                if lonelyShapes[shape] == nil, lonelyShapes.count >= Self.lonelyShapesLimit { lonelyShapes.removeAll() }
                lonelyShapes[shape] = keyHash
                return nil
            }
            lonelyShapes[shape] = nil
        }
        let reference = Reference(value)
        guard referenceFootprint + reference.footprint <= limits.referenceBytes else { return best }
        let number = Int32(references.count)
        references.append(reference)
        referenceFootprint += reference.footprint
        byShape[shape, default: []].append(number)
        return Self.delta(value, from: reference, number: number, name: name, budget: budget)
    }

    /// The value `delta` packs for `key`; nil if it is not a delta this table made.
    public func unpack(_ delta: [UInt8], key: [UInt8]) -> [UInt8]? {
        delta.withUnsafeBytes { unpack($0, key: key) }
    }

    /// The value the delta in `raw` packs for `key`; nil if it is not a delta this table made.
    func unpack(_ raw: UnsafeRawBufferPointer, key: [UInt8]) -> [UInt8]? {
        let name = Self.name(of: key)
        var cursor = 0
        guard let number = WireVarint.read(raw, at: &cursor), number < references.count,
              let count = WireVarint.read(raw, at: &cursor), count <= limits.largestValue else { return nil }
        let reference = references[Int(number)].bytes
        return reference.withUnsafeBytes { source -> [UInt8]? in
            var failed = false
            let value = [UInt8](unsafeUninitializedCapacity: Int(count)) { out, initialized in
                var written = 0
                while cursor < raw.count {
                    guard let operation = WireVarint.read(raw, at: &cursor) else { failed = true; break }
                    if operation == 1 {
                        guard !name.isEmpty, name.count <= out.count - written else { failed = true; break }
                        name.withUnsafeBufferPointer { (out.baseAddress! + written).initialize(from: $0.baseAddress!, count: $0.count) }
                        written += name.count
                        continue
                    }
                    let length = Int(operation >> 1)
                    guard length <= out.count - written else { failed = true; break }
                    if operation & 1 == 0 {
                        guard length <= raw.count - cursor else { failed = true; break }
                        if length > 0 { (out.baseAddress! + written).initialize(from: raw.baseAddress!.assumingMemoryBound(to: UInt8.self) + cursor, count: length) }
                        cursor += length
                    } else {
                        guard let offset = WireVarint.read(raw, at: &cursor), Int(offset) <= source.count - length else { failed = true; break }
                        if length > 0 { (out.baseAddress! + written).initialize(from: source.baseAddress!.assumingMemoryBound(to: UInt8.self) + Int(offset), count: length) }
                    }
                    written += length
                }
                if written != out.count { failed = true }
                initialized = failed ? 0 : written
            }
            return failed ? nil : value
        }
    }

    /// The length of the value `delta` packs, read from its head.
    public static func unpackedCount(_ delta: [UInt8]) -> Int {
        delta.withUnsafeBytes { unpackedCount($0) }
    }

    static func unpackedCount(_ raw: UnsafeRawBufferPointer) -> Int {
        var cursor = 0
        _ = WireVarint.read(raw, at: &cursor)
        return WireVarint.read(raw, at: &cursor).map(Int.init) ?? 0
    }

    /// `value` as copies from `reference`, the key's `name` where the value holds it, and the bytes
    /// between them; nil past `budget` bytes.
    static func delta(_ value: [UInt8], from reference: Reference, number: Int32, name: ArraySlice<UInt8>, budget: Int) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(min(budget, 256))
        WireVarint.append(UInt64(number), to: &out)
        WireVarint.append(UInt64(value.count), to: &out)
        let complete = value.withUnsafeBytes { target -> Bool in
            reference.bytes.withUnsafeBytes { source -> Bool in
                name.withUnsafeBytes { name -> Bool in
                    let table = reference.table
                    let shift = reference.shift
                    let end = target.count
                    var literalStart = 0
                    var at = 0
                    func literal(upTo stop: Int) {
                        guard stop > literalStart else { return }
                        WireVarint.append(UInt64(stop - literalStart) << 1, to: &out)
                        out.append(contentsOf: UnsafeRawBufferPointer(rebasing: target[literalStart..<stop]))
                    }
                    // Where the key's name next starts in the value (`end`: nowhere). A copy stops
                    // there, even when the reference's own name begins with the same bytes.
                    func nextName(from start: Int) -> Int {
                        guard let first = name.first else { return end }
                        var index = start
                        while index + name.count <= end {
                            if target[index] == first, memcmp(target.baseAddress! + index, name.baseAddress!, name.count) == 0 { return index }
                            index += 1
                        }
                        return end
                    }
                    var nameAt = nextName(from: 0)
                    while at + 4 <= end {
                        if at == nameAt {
                            literal(upTo: at)
                            out.append(1)
                            at += name.count
                            literalStart = at
                            nameAt = nextName(from: at)
                            if out.count > budget { return false }
                            continue
                        }
                        guard at + 4 <= nameAt else {
                            at += 1
                            continue
                        }
                        let word = target.loadUnaligned(fromByteOffset: at, as: UInt32.self)
                        let found = Int(table[Int(Reference.hash(word, shift))])
                        guard found > 0, source.loadUnaligned(fromByteOffset: found - 1, as: UInt32.self) == word else {
                            at += 1
                            continue
                        }
                        var from = found - 1
                        var start = at
                        var stop = at + 4
                        while stop < nameAt, from + (stop - start) < source.count, target[stop] == source[from + (stop - start)] { stop += 1 }
                        // Back over bytes the match shares that were to be sent as they are.
                        while start > literalStart, from > 0, target[start - 1] == source[from - 1] { start -= 1; from -= 1 }
                        literal(upTo: start)
                        WireVarint.append(UInt64(stop - start) << 1 | 1, to: &out)
                        WireVarint.append(UInt64(from), to: &out)
                        at = stop
                        literalStart = stop
                        if out.count > budget { return false }
                    }
                    literal(upTo: end)
                    return out.count <= budget
                }
            }
        }
        // Held for as long as the value is: exactly as long as it is (the array grew by doubling).
        return complete ? out.withUnsafeBufferPointer { Array($0) } : nil
    }
}
