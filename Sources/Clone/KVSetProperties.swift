/// A KVSET's properties frame as the server reads it: every line checked as `CloneProperties`
/// checks it, the lines the server acts on picked out as bytes, and the frame rebuilt without
/// the server's own lines only when it had any. No `String` is made for a well-formed frame of
/// ASCII lines: this runs for every write the server takes.
struct KVSetProperties {
    /// The first value of each line the server reads, as offsets into the frame.
    private var ackRange: Range<Int>?
    private var writeSequenceRange: Range<Int>?
    private var writerGenerationRange: Range<Int>?
    private var ttlRange: Range<Int>?
    private let frame: [UInt8]
    /// The frame to store and publish: without `ack`, `wseq`, `wgen` and `sprev` lines (the
    /// server's to say or to take off), otherwise the frame as it came.
    private(set) var published: [UInt8]

    var ack: ArraySlice<UInt8>? { ackRange.map { frame[$0] } }
    var writeSequence: ArraySlice<UInt8>? { writeSequenceRange.map { frame[$0] } }
    var writerGeneration: ArraySlice<UInt8>? { writerGenerationRange.map { frame[$0] } }
    var ttl: ArraySlice<UInt8>? { ttlRange.map { frame[$0] } }

    /// The names the server acts on.
    private enum Name {
        case ack, writeSequence, writerGeneration, ttl, sessionPrevious, other
    }

    /// Reads `frame`; throws what `CloneProperties(decoding:)` would for a malformed one.
    init(_ frame: [UInt8]) throws(CloneDecodeError) {
        self.frame = frame
        published = frame
        // Where the first line taken out starts: while every line after it is taken out too (an
        // agent puts its own lines last), what is kept is the frame up to there, copied once at
        // the end. A line kept after one taken out needs `kept`: the lines kept so far, then
        // every later one kept.
        var firstRemoved: Int?
        var kept: [UInt8]?
        var failure: CloneDecodeError?
        frame.withUnsafeBufferPointer { bytes in
            var lineStart = 0
            for index in 0..<bytes.count where bytes[index] == UInt8(ascii: "\n") {
                guard let equals = Self.check(bytes, lineStart..<index, failure: &failure) else { return }
                let value = (equals + 1)..<index
                var removed = true
                switch Self.name(bytes, lineStart..<equals) {
                case .ack: if ackRange == nil { ackRange = value }
                case .writeSequence: if writeSequenceRange == nil { writeSequenceRange = value }
                case .writerGeneration: if writerGenerationRange == nil { writerGenerationRange = value }
                case .sessionPrevious: break
                case .ttl:
                    if ttlRange == nil { ttlRange = value }
                    removed = false
                case .other: removed = false
                }
                if removed {
                    if firstRemoved == nil { firstRemoved = lineStart }
                } else if let firstRemoved {
                    if kept == nil {
                        kept = []
                        kept!.reserveCapacity(bytes.count)
                        kept!.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[0..<firstRemoved]))
                    }
                    kept!.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[lineStart...index]))
                }
                lineStart = index + 1
            }
            if lineStart != bytes.count {
                failure = .malformedProperties("the last property line does not end in a newline")
            }
        }
        if let failure { throw failure }
        // Exactly as long as it is, and no block at all when nothing is left: the server keeps
        // this frame with every key it stores.
        if let kept {
            published = kept.withUnsafeBufferPointer { Array($0) }
        } else if let firstRemoved {
            published = firstRemoved == 0 ? [] : Array(frame[0..<firstRemoved])
        }
    }

    private static func name(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Name {
        func equals(_ word: StaticString) -> Bool {
            guard word.utf8CodeUnitCount == range.count else { return false }
            let start = word.utf8Start
            for offset in 0..<range.count where bytes[range.lowerBound + offset] != start[offset] { return false }
            return true
        }
        switch range.count {
        case 3: return equals("ack") ? .ack : equals("ttl") ? .ttl : .other
        case 4: return equals("wseq") ? .writeSequence : equals("wgen") ? .writerGeneration : .other
        case 5: return equals("sprev") ? .sessionPrevious : .other
        default: return .other
        }
    }

    /// Checks one `name=value` line (the name non-empty printable ASCII without spaces, the
    /// value UTF-8); returns where its `=` is, or nil with `failure` set.
    private static func check(_ bytes: UnsafeBufferPointer<UInt8>, _ line: Range<Int>, failure: inout CloneDecodeError?) -> Int? {
        var equals: Int?
        for index in line where bytes[index] == UInt8(ascii: "=") {
            equals = index
            break
        }
        let text = { Array(bytes[line])[...].printableText }
        guard let equals else {
            failure = .malformedProperties("a property line has no '=': \(text())")
            return nil
        }
        guard equals > line.lowerBound, bytes[line.lowerBound..<equals].allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            failure = .malformedProperties("a property name must be printable ASCII without spaces: \(text())")
            return nil
        }
        let value = bytes[(equals + 1)..<line.upperBound]
        guard value.isValidUTF8 else {
            failure = .malformedProperties("a property value is not UTF-8 text: \(text())")
            return nil
        }
        return equals
    }
}

extension Collection<UInt8> {
    /// Whether the bytes are UTF-8 text. ASCII, what Flowbus writes, is decided without the
    /// standard library's generic validation, which costs about a thousand instructions a call.
    var isValidUTF8: Bool {
        allSatisfy { $0 < 0x80 } || String(validating: self, as: UTF8.self) != nil
    }
}

extension ArraySlice<UInt8> {
    /// The bytes as text, for error messages (invalid UTF-8 repaired).
    var text: String { String(decoding: self, as: UTF8.self) }
}
