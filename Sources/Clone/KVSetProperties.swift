import Glibc

/// A KVSET's properties frame as the server reads it: every line checked as `CloneProperties`
/// checks it, the lines the server acts on picked out as bytes, and the frame rebuilt without
/// the server's own lines only when it had any. No `String` is made for a well-formed frame of
/// ASCII lines: this runs for every write the server takes.
struct KVSetProperties {
    /// The first value of each line the server reads, as offsets into the frame.
    private(set) var ackRange: Range<Int>?
    private(set) var writeSequenceRange: Range<Int>?
    private(set) var writerGenerationRange: Range<Int>?
    private(set) var ttlRange: Range<Int>?
    /// The frame to store and publish: without `ack`, `wseq`, `wgen` and `sprev` lines (the
    /// server's to say or to take off), otherwise the frame as it came.
    private(set) var published: [UInt8] = []

    /// The names the server acts on.
    private enum Name {
        case ack, writeSequence, writerGeneration, ttl, sessionPrevious, other
    }

    /// Reads `frame`; throws what `CloneProperties(decoding:)` would for a malformed one.
    init(_ frame: [UInt8]) throws(CloneDecodeError) {
        self = try withBytes(frame) { (bytes) throws(CloneDecodeError) in try KVSetProperties(bytes) }
    }

    /// Reads the frame where the socket holds it: no array is made but `published`, and that one
    /// only when the frame keeps a line (an agent's own lines alone leave none). The ranges are
    /// offsets into `frame`, read with `slice(_:of:)`.
    init(_ frame: UnsafeRawBufferPointer) throws(CloneDecodeError) {
        // Where the first line taken out starts: while every line after it is taken out too (an
        // agent puts its own lines last), what is kept is the frame up to there, copied once at
        // the end. A line kept after one taken out needs `kept`: the lines kept so far, then
        // every later one kept.
        var firstRemoved: Int?
        var kept: [UInt8]?
        let bytes = frame.assumingMemoryBound(to: UInt8.self)
        var lineStart = 0
        while lineStart < bytes.count {
            // Lines are found with memchr: this runs for every write the server takes.
            guard let found = memchr(bytes.baseAddress! + lineStart, Int32(UInt8(ascii: "\n")), bytes.count - lineStart) else { break }
            let index = UnsafeRawPointer(found) - UnsafeRawPointer(bytes.baseAddress!)
            let equals = try Self.check(bytes, lineStart..<index)
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
            throw .malformedProperties("the last property line does not end in a newline")
        }
        // Exactly as long as it is, and no block at all when nothing is left: the server keeps
        // this frame with every key it stores.
        if let kept {
            published = kept.withUnsafeBufferPointer { Array($0) }
        } else if let firstRemoved {
            published = firstRemoved == 0 ? [] : Array(UnsafeBufferPointer(rebasing: bytes[0..<firstRemoved]))
        } else if !bytes.isEmpty {
            published = Array(bytes)
        }
    }

    /// The bytes of `range` in `frame`, the buffer this was read from.
    static func slice(_ range: Range<Int>?, of frame: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        range.map { UnsafeRawBufferPointer(rebasing: frame[$0]) }
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
    /// value UTF-8); returns where its `=` is.
    private static func check(_ bytes: UnsafeBufferPointer<UInt8>, _ line: Range<Int>) throws(CloneDecodeError) -> Int {
        // The name up to the first `=` must be printable ASCII without spaces, the value after
        // it ASCII (what Flowbus writes) or else valid UTF-8; read through a pointer, as this
        // runs for every write the server takes.
        let start = bytes.baseAddress!
        var equals = -1
        var at = line.lowerBound
        while at < line.upperBound {
            let byte = start[at]
            if byte == UInt8(ascii: "=") {
                equals = at
                break
            }
            if byte <= 0x20 || byte >= 0x7F { throw .malformedProperties(Self.badName(bytes, line)) }
            at += 1
        }
        var ascii = true
        at += 1
        while at < line.upperBound {
            if start[at] >= 0x80 {
                ascii = false
                break
            }
            at += 1
        }
        guard equals >= 0 else {
            throw .malformedProperties("a property line has no '=': \(Self.printable(bytes, line))")
        }
        guard equals > line.lowerBound else {
            throw .malformedProperties(Self.badName(bytes, line))
        }
        guard ascii || bytes[(equals + 1)..<line.upperBound].isValidUTF8 else {
            throw .malformedProperties("a property value is not UTF-8 text: \(Self.printable(bytes, line))")
        }
        return equals
    }

    private static func badName(_ bytes: UnsafeBufferPointer<UInt8>, _ line: Range<Int>) -> String {
        // A line without `=` says so, whatever its bytes.
        guard bytes[line].contains(UInt8(ascii: "=")) else { return "a property line has no '=': \(printable(bytes, line))" }
        return "a property name must be printable ASCII without spaces: \(printable(bytes, line))"
    }

    private static func printable(_ bytes: UnsafeBufferPointer<UInt8>, _ line: Range<Int>) -> String {
        Array(bytes[line])[...].printableText
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
