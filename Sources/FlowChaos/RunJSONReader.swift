/// A reader of the JSON that `JSONEncoder` writes, made for run.json's sessions: a million
/// client and host events are decoded straight from the file's bytes into their structs, with
/// no `Decoder` containers, no boxed values and no copy of the text.
///
/// It reads what JSON allows in the places run.json has them (objects, arrays, strings with any
/// escape, integers, booleans, null) and throws `RunJSONReader.Unexpected` at anything else: a
/// fraction or exponent, a member missing or of the wrong type, a string that is not UTF-8.
/// The caller then decodes the same bytes with `JSONDecoder`, which gives the answer, or the
/// error, it always gave. Members a struct does not have are skipped, as `JSONDecoder` skips
/// them; their text is not checked.
struct RunJSONReader {
    struct Unexpected: Error, CustomStringConvertible {
        var offset: Int
        var what: String
        var description: String { "run.json at byte \(offset): \(what)" }
    }

    static let deepest = 256

    let bytes: UnsafeBufferPointer<UInt8>
    private(set) var index: Int
    let end: Int

    init(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) {
        self.bytes = bytes
        self.index = range.lowerBound
        self.end = range.upperBound
    }

    var atEnd: Bool {
        mutating get {
            skipSpace()
            return index == end
        }
    }

    func unexpected(_ what: String) -> Unexpected { Unexpected(offset: index, what: what) }

    mutating func skipSpace() {
        while index < end {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    /// The next byte that is not white space, not consumed.
    mutating func peek() throws(Unexpected) -> UInt8 {
        skipSpace()
        guard index < end else { throw unexpected("the text ends early") }
        return bytes[index]
    }

    mutating func consume(_ byte: UInt8) throws(Unexpected) {
        guard try peek() == byte else { throw unexpected("'\(Character(Unicode.Scalar(byte)))' expected") }
        index += 1
    }

    /// Consumes `null` when it comes next: an optional member's nil.
    mutating func null() throws(Unexpected) -> Bool {
        guard try peek() == UInt8(ascii: "n") else { return false }
        try literal("null")
        return true
    }

    private mutating func literal(_ word: StaticString) throws(Unexpected) {
        let count = word.utf8CodeUnitCount
        guard end - index >= count else { throw unexpected("\(word) expected") }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] {
            throw unexpected("\(word) expected")
        }
        index += count
    }

    /// Calls `member` with each member of an object that `Member` names, in the order written, and
    /// nil for any other; `member` reads the value. A member named twice is refused (`JSONDecoder`
    /// keeps the first, which the slice's second pass then gives).
    mutating func object<Member: RunJSONMembers>(_: Member.Type, _ member: (inout RunJSONReader, Member?) throws(Unexpected) -> Void) throws(Unexpected) {
        var seen: UInt64 = 0
        try object { reader, name throws(Unexpected) in
            guard let index = Member.names.firstIndex(of: name) else { return try member(&reader, nil) }
            guard seen & (1 << index) == 0 else { throw reader.unexpected("member \(name) twice") }
            seen |= 1 << index
            try member(&reader, Member(rawValue: index))
        }
    }

    /// Calls `member` with each member's name, in the order written; `member` reads its value.
    mutating func object(_ member: (inout RunJSONReader, String) throws(Unexpected) -> Void) throws(Unexpected) {
        try consume(UInt8(ascii: "{"))
        if try peek() == UInt8(ascii: "}") {
            index += 1
            return
        }
        while true {
            let name = try string()
            try consume(UInt8(ascii: ":"))
            try member(&self, name)
            switch try peek() {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"): index += 1; return
            default: throw unexpected("',' or '}' expected after a member")
            }
        }
    }

    /// Calls `element` for each element of an array; `element` reads it.
    mutating func array(_ element: (inout RunJSONReader) throws(Unexpected) -> Void) throws(Unexpected) {
        try consume(UInt8(ascii: "["))
        if try peek() == UInt8(ascii: "]") {
            index += 1
            return
        }
        while true {
            try element(&self)
            switch try peek() {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"): index += 1; return
            default: throw unexpected("',' or ']' expected after an element")
            }
        }
    }

    mutating func bool() throws(Unexpected) -> Bool {
        switch try peek() {
        case UInt8(ascii: "t"): try literal("true"); return true
        case UInt8(ascii: "f"): try literal("false"); return false
        default: throw unexpected("true or false expected")
        }
    }

    /// An integer written without fraction or exponent, as `JSONEncoder` writes one.
    mutating func uint64() throws(Unexpected) -> UInt64 {
        _ = try peek()
        let start = index
        var value: UInt64 = 0
        while index < end, bytes[index] &- UInt8(ascii: "0") < 10 {
            let (times, overflowTimes) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflowSum) = times.addingReportingOverflow(UInt64(bytes[index] &- UInt8(ascii: "0")))
            guard !overflowTimes, !overflowSum else { throw unexpected("an integer too large") }
            value = sum
            index += 1
        }
        guard index > start else { throw unexpected("an unsigned integer expected") }
        // No leading zeros, fraction or exponent: those go to JSONDecoder.
        guard index - start == 1 || bytes[start] != UInt8(ascii: "0") else { throw unexpected("a leading zero") }
        if index < end, bytes[index] == UInt8(ascii: ".") || bytes[index] | 0x20 == UInt8(ascii: "e") {
            throw unexpected("an integer expected, not a fraction or exponent")
        }
        return value
    }

    mutating func int64() throws(Unexpected) -> Int64 {
        if try peek() == UInt8(ascii: "-") {
            index += 1
            let magnitude = try uint64()
            guard magnitude <= UInt64(Int64.max) + 1 else { throw unexpected("an integer too small") }
            return magnitude == UInt64(Int64.max) + 1 ? Int64.min : -Int64(magnitude)
        }
        let value = try uint64()
        guard value <= UInt64(Int64.max) else { throw unexpected("an integer too large") }
        return Int64(value)
    }

    mutating func int() throws(Unexpected) -> Int {
        let value = try int64()
        guard let fitting = Int(exactly: value) else { throw unexpected("an integer too large") }
        return fitting
    }

    /// A string, its escapes undone; it must be valid UTF-8.
    mutating func string() throws(Unexpected) -> String {
        guard try peek() == UInt8(ascii: "\"") else { throw unexpected("a string expected") }
        index += 1
        let start = index
        // The bytes or-ed together: under 0x80, the string is ASCII and needs no UTF-8 check
        // (`String(validating:)` costs a generic-metadata lookup a call, half the reader's time).
        var seen: UInt8 = 0
        while index < end {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let text = UnsafeBufferPointer(rebasing: bytes[start..<index])
                index += 1
                if seen < 0x80 { return String(decoding: text, as: UTF8.self) }
                guard let valid = String(validating: text, as: UTF8.self) else {
                    index = start - 1
                    throw unexpected("a string that is not UTF-8")
                }
                return valid
            }
            seen |= byte
            if byte == UInt8(ascii: "\\") { return try escapedString(from: start) }
            guard byte >= 0x20 else { throw unexpected("a control character in a string") }
            index += 1
        }
        throw unexpected("a string that does not end")
    }

    /// The rest of a string that has escapes, its first `index - start` bytes plain.
    private mutating func escapedString(from start: Int) throws(Unexpected) -> String {
        var utf8 = Array(UnsafeBufferPointer(rebasing: bytes[start..<index]))
        while index < end {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                guard let text = String(validating: utf8, as: UTF8.self) else { throw unexpected("a string that is not UTF-8") }
                return text
            case UInt8(ascii: "\\"):
                guard index + 1 < end else { throw unexpected("a string that does not end") }
                let escaped = bytes[index + 1]
                index += 2
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(escaped)
                case UInt8(ascii: "b"): utf8.append(0x08)
                case UInt8(ascii: "f"): utf8.append(0x0C)
                case UInt8(ascii: "n"): utf8.append(0x0A)
                case UInt8(ascii: "r"): utf8.append(0x0D)
                case UInt8(ascii: "t"): utf8.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xD800..<0xDC00).contains(scalar) {
                        // A high surrogate: its low half must follow as the next escape.
                        guard end - index >= 6, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                            throw unexpected("a lone surrogate in a string")
                        }
                        index += 2
                        let low = try hex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw unexpected("a lone surrogate in a string") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00..<0xE000).contains(scalar) {
                        throw unexpected("a lone surrogate in a string")
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { throw unexpected("an escape that is no character") }
                    utf8.append(contentsOf: UTF8.encode(unicode)!)
                default:
                    throw unexpected("an unknown escape in a string")
                }
            default:
                guard byte >= 0x20 else { throw unexpected("a control character in a string") }
                utf8.append(byte)
                index += 1
            }
        }
        throw unexpected("a string that does not end")
    }

    private mutating func hex4() throws(Unexpected) -> UInt32 {
        guard end - index >= 4 else { throw unexpected("a \\u escape that ends early") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw unexpected("a \\u escape that is not hexadecimal")
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    /// Skips a member's value this reader does not keep (as `JSONDecoder` ignores unknown keys),
    /// nested at most `Self.deepest` levels (deeper goes to `JSONDecoder`, which has its own limit).
    mutating func skipValue(depth: Int = 0) throws(Unexpected) {
        guard depth < Self.deepest else { throw unexpected("values nested deeper than \(Self.deepest)") }
        switch try peek() {
        case UInt8(ascii: "\""): _ = try string()
        case UInt8(ascii: "{"): try object { reader, _ throws(Unexpected) in try reader.skipValue(depth: depth + 1) }
        case UInt8(ascii: "["): try array { reader throws(Unexpected) in try reader.skipValue(depth: depth + 1) }
        case UInt8(ascii: "t"), UInt8(ascii: "f"): _ = try bool()
        case UInt8(ascii: "n"): _ = try null()
        default:
            // A number: whatever it is, up to the next delimiter.
            let start = index
            while index < end {
                switch bytes[index] {
                case UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x09, 0x0A, 0x0D: break
                default: index += 1; continue
                }
                break
            }
            guard index > start else { throw unexpected("a value expected") }
        }
    }

    /// An optional member's value: nil for `null`.
    mutating func optionalString() throws(Unexpected) -> String? { try null() ? nil : try string() }
    mutating func optionalUInt64() throws(Unexpected) -> UInt64? { try null() ? nil : try uint64() }
    mutating func optionalBool() throws(Unexpected) -> Bool? { try null() ? nil : try bool() }

    /// A required member `name` that the text did not have.
    func missing(_ name: String, in type: String) -> Unexpected { unexpected("\(type) without \(name)") }
}

/// The members a record has, as an enum whose cases are named as the members are in JSON.
protocol RunJSONMembers: CaseIterable, RawRepresentable where RawValue == Int {
    /// The cases' names, by raw value (at most 64).
    static var names: [String] { get }
}

extension RunJSONMembers {
    static func namesOfCases() -> [String] { allCases.map { "\($0)" } }
}
